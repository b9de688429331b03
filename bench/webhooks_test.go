package bench

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The receiver checks signatures as the docs tell a receiver to (a vector made with openssl).
func TestVerifyHookSignature(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"d1"}`)
	sig := "v1=69cd92a0516e7ef22cc06ffadf5e3b7fbaf9e2cd0b656454f1b41c37d9150aa5"
	require.True(t, verifyHook("whsec_test", "1733162400", sig, body))
	require.True(t, verifyHook("whsec_test", "1733162400", "v1=00, "+sig, body), "one of several values")
	require.False(t, verifyHook("whsec_other", "1733162400", sig, body))
	require.False(t, verifyHook("whsec_test", "1733162401", sig, body), "the timestamp is signed")
	require.False(t, verifyHook("whsec_test", "x", sig, body))
}

// The receiver counts each delivery id once, only events after the measured point, and only
// deliveries that verify; it keeps the lag from the event's time.
func TestHookReceiverCountsDeliveries(t *testing.T) {
	t.Parallel()
	h := newHookReceiver()
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(id string, seq int, at time.Time, secret string) {
		body := fmt.Sprintf(`{"id":%q,"event":{"id":"%d","kind":"task_assigned","at":%q}}`, id, seq, at.Format(time.RFC3339Nano))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Chorus-Webhook-Id", id)
		ts := fmt.Sprint(time.Now().Unix())
		req.Header.Set("Chorus-Timestamp", ts)
		req.Header.Set("Chorus-Signature", sign(secret, ts, body))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNoContent, res.StatusCode)
	}
	post("setup", 3, time.Now(), "") // before measure: not counted
	h.measure("whsec_s", 5)
	post("old", 5, time.Now(), "whsec_s") // at the measured point: not counted
	post("d1", 6, time.Now().Add(-200*time.Millisecond), "whsec_s")
	post("d1", 6, time.Now(), "whsec_s") // a retry of the same delivery
	post("d2", 7, time.Now(), "whsec_wrong")
	r := h.result()
	require.Equal(t, 1, r.delivered)
	require.Equal(t, 1, r.duplicates)
	require.Equal(t, 1, r.bad)
	require.Equal(t, 2, h.before)
	require.Len(t, r.lag, 1)
	require.GreaterOrEqual(t, r.lag[0], 200*time.Millisecond)
	require.False(t, h.waitFor(context.Background(), 1, time.Hour).IsZero(), "already there: returns at once")
}

// sign signs as a delivery is signed ("" for no signature).
func sign(secret, ts, body string) string {
	if secret == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + body))
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Keeping up means: the writes reached the rate, every event was delivered with a good
// signature, and the backlog drained within 5 s of the last write.
func TestHookFiguresTargets(t *testing.T) {
	t.Parallel()
	ok := hookFigures{Writes: hookWritesComment, Rate: 50, Seconds: 20, Calls: 1000, WriteRate: 49.8, Events: 1000, Delivered: 1000, DrainSeconds: 1.2,
		Backlog: []hookSample{{Written: 10, Delivered: 4}, {Written: 60, Delivered: 31}, {Written: 110, Delivered: 100}}}
	for _, c := range ok.targets() {
		require.True(t, c.Pass, c.String())
	}
	require.Equal(t, []string{"PASS events written a second: 49.8 /s (target >= 45 /s)",
		"PASS events delivered: 1000 events (target >= 1000 events)",
		"PASS backlog drained after the last write: 1.2 s (target <= 5 s)"},
		[]string{ok.targets()[0].String(), ok.targets()[1].String(), ok.targets()[2].String()})
	require.Equal(t, 29, ok.maxBacklog())
	require.Contains(t, ok.note(16), "peaked at 29")
	require.Contains(t, ok.note(16), "chorus_add_comment")

	fail := func(edit func(*hookFigures), name string) {
		f := ok
		edit(&f)
		for _, c := range f.targets() {
			if c.Name == name {
				require.False(t, c.Pass, c.String())
				return
			}
		}
		t.Fatalf("no target %q", name)
	}
	fail(func(f *hookFigures) { f.WriteRate = 30 }, "events written a second")
	fail(func(f *hookFigures) { f.Delivered = 999 }, "events delivered")
	fail(func(f *hookFigures) { f.BadSignature = 1 }, "events delivered")
	fail(func(f *hookFigures) { f.Events, f.Delivered = 0, 0 }, "events delivered")
	fail(func(f *hookFigures) { f.DrainSeconds = 5.5 }, "backlog drained after the last write")
	fail(func(f *hookFigures) { f.DrainSeconds = -1 }, "backlog drained after the last write")
}
