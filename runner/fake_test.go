//go:build unix

package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeEvents is a GET /api/events that speaks the wire format of the events contract: bearer
// key, kind filter, Last-Event-ID resume (none: from the newest; 0: all kept), retry: first, a
// gap frame when the resume point is older than the oldest event kept, events as
// id/event/data frames, heartbeats. Tests publish events and drop connections.
type fakeEvents struct {
	t      *testing.T
	mu     sync.Mutex
	events []Event
	oldest int64 // events below it are pruned
	wake   chan struct{}
	drop   chan struct{}
	// lastIDs are the Last-Event-ID headers of each connection ("-" when none), in order.
	lastIDs []string
	kinds   []string
}

func newFakeEvents(t *testing.T) (*fakeEvents, string) {
	f := &fakeEvents{t: t, wake: make(chan struct{}), drop: make(chan struct{}), oldest: 1}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// publish adds an event (seq = the next position) and returns it.
func (f *fakeEvents) publish(kind, entityType, entity, idea string) Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := int64(len(f.events) + 1)
	e := Event{ID: strconv.FormatInt(seq, 10), Seq: seq, Kind: kind, ProjectUUID: "p-1", EntityType: entityType,
		EntityUUID: entity, IdeaUUID: idea, ActorType: "user", ActorUUID: "u-1", At: "2026-12-02T18:00:00Z"}
	f.events = append(f.events, e)
	close(f.wake)
	f.wake = make(chan struct{})
	return e
}

// dropAll closes every open connection.
func (f *fakeEvents) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.drop)
	f.drop = make(chan struct{})
}

func (f *fakeEvents) connections() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lastIDs...)
}

func (f *fakeEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/events" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"Invalid API key"}`)
		return
	}
	var kinds []string
	for _, k := range r.URL.Query()["kind"] {
		kinds = append(kinds, strings.Split(k, ",")...)
	}
	f.mu.Lock()
	f.kinds = kinds
	cursor := int64(len(f.events))
	last, has := r.Header.Get("Last-Event-ID"), r.Header.Get("Last-Event-ID") != ""
	if has {
		f.lastIDs = append(f.lastIDs, last)
		cursor, _ = strconv.ParseInt(last, 10, 64)
	} else {
		f.lastIDs = append(f.lastIDs, "-")
	}
	gap := has && cursor < f.oldest-1
	if gap {
		cursor = f.oldest - 1
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	fl := w.(http.Flusher)
	_, _ = io.WriteString(w, "retry: 10\n\n: ping\n\n")
	if gap {
		fmt.Fprintf(w, "event: gap\ndata: {\"kind\":\"gap\",\"oldestId\":\"%d\"}\n\n", f.oldest)
	}
	fl.Flush()
	for {
		f.mu.Lock()
		var send []Event
		for _, e := range f.events {
			if e.Seq > cursor && (len(kinds) == 0 || contains(kinds, e.Kind)) {
				send = append(send, e)
			}
		}
		cursor = int64(len(f.events))
		wake, drop := f.wake, f.drop
		f.mu.Unlock()
		for _, e := range send {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Kind, b)
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-drop:
			return
		case <-wake:
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fakePlaybooks answers every playbook with a line naming it.
type fakePlaybooks struct{}

func (fakePlaybooks) Playbook(_ context.Context, name string, args map[string]string) (string, error) {
	return "PLAYBOOK " + name + " " + argText(args), nil
}

// turnScript is a turn command for tests: it stamps its start and end in stamps (turn id, idea,
// event ids, event kinds) and, between them, waits until gates/<turn id> or gates/all exists.
const turnScript = `echo "start $CHORUS_TURN_ID $CHORUS_IDEA_UUID $CHORUS_EVENT_IDS $CHORUS_EVENT_KINDS" >> "$STAMPS"
cat > "$GATES/../prompt-$CHORUS_TURN_ID"
while [ ! -e "$GATES/$CHORUS_TURN_ID" ] && [ ! -e "$GATES/all" ]; do sleep 0.02; done
echo "end $CHORUS_TURN_ID $CHORUS_IDEA_UUID" >> "$STAMPS"
`

// harness runs one agent against a fakeEvents with turnScript, and reads what its turns did.
type harness struct {
	t                          *testing.T
	dir, stamps, gates, script string
	agent                      Agent
	opts                       Options
	mu                         sync.Mutex
	taken                      []Event
	logs                       *syncBuf
	cancel                     context.CancelFunc
	done                       chan error
}

func newHarness(t *testing.T, url string) *harness {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, stamps: filepath.Join(dir, "stamps"), gates: filepath.Join(dir, "gates"),
		script: filepath.Join(dir, "turn.sh"), logs: &syncBuf{}}
	require.NoError(t, os.MkdirAll(h.gates, 0o700))
	require.NoError(t, os.WriteFile(h.script, []byte(turnScript), 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.MkdirAll(work, 0o700))
	a, err := AgentSpec{Name: "dev", URL: url, KeyEnv: "K", Workdir: work, MaxConcurrent: 2,
		Command: fmt.Sprintf("STAMPS=%s GATES=%s sh %s", h.stamps, h.gates, h.script)}.Resolve(func(string) string { return testKey })
	require.NoError(t, err)
	// The tests of events turns start on a fresh state directory without the first start's
	// catch-up turn, so that their turns are the events'; the catch-up tests turn it on.
	a.NoCatchUp = true
	h.agent = a
	h.opts = Options{Log: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Playbooks: func(Agent) Playbooks { return fakePlaybooks{} }, Grace: time.Minute,
		taken: func(_ string, e Event) { h.mu.Lock(); h.taken = append(h.taken, e); h.mu.Unlock() }}
	return h
}

// start runs the runner until stop.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- Run(ctx, []Agent{h.agent}, h.opts) }()
	h.t.Cleanup(func() {
		h.release("all")
		if h.cancel != nil {
			h.stop()
		}
	})
}

// stop cancels the runner and returns what Run returned.
func (h *harness) stop() error {
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(time.Minute):
		h.t.Fatalf("the runner did not stop; its log:\n%s", h.logs)
		return nil
	}
}

// waitTaken waits until the runner has taken n events in all.
func (h *harness) waitTaken(n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.taken) >= n }, time.Minute,
		10*time.Millisecond, "the runner took fewer than %d events; its log:\n%s", n, h.logs)
}

// release lets turn id (or "all") end.
func (h *harness) release(id string) {
	require.NoError(h.t, os.WriteFile(filepath.Join(h.gates, id), nil, 0o600))
}

// stamp is one line the turn script wrote.
type stamp struct {
	what, turn, idea, ids, kinds string
}

func (h *harness) readStamps() []stamp {
	b, err := os.ReadFile(h.stamps)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	var out []stamp
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Split(sc.Text(), " ")
		for len(f) < 5 {
			f = append(f, "")
		}
		out = append(out, stamp{f[0], f[1], f[2], f[3], f[4]})
	}
	return out
}

// waitStamps waits until the script has written a line for which ok holds.
func (h *harness) waitStamp(what, turn string) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		for _, s := range h.readStamps() {
			if s.what == what && s.turn == turn {
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond, "turn %s did not %s; stamps %v; log:\n%s", turn, what, h.readStamps(), h.logs)
}

// journal reads the agent's journal.
func (h *harness) journal() []Record {
	b, err := os.ReadFile(filepath.Join(h.agent.StateDir, JournalFile))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	var out []Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r Record
		require.NoError(h.t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// started is the turns the journal says started.
func (h *harness) started() []Record {
	var out []Record
	for _, r := range h.journal() {
		if r.Type == turnStarted {
			out = append(out, r)
		}
	}
	return out
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
