package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// parseSSE hands over each frame that names an event, with its id and data, and passes over
// the retry line, comments and frames without an event name; CRLF line ends are read too.
func TestParseSSEReadsFrames(t *testing.T) {
	t.Parallel()
	in := "retry: 2000\n\n" +
		": ping\n\n" +
		"id: 7\nevent: task_assigned\ndata: {\"id\":\"7\",\"kind\":\"task_assigned\",\"entityUuid\":\"t1\",\"at\":\"2026-12-02T18:00:00.5Z\"}\n\n" +
		"data: {\"kind\":\"nameless\"}\n\n" +
		"id: 8\r\nevent: mentioned\r\ndata: {\"id\":\"8\",\"kind\":\"mentioned\",\"entityUuid\":\"c2\"}\r\n\r\n"
	var got []sseEvent
	err := parseSSE(bufio.NewReader(strings.NewReader(in)), func(ev sseEvent, at time.Time) {
		require.False(t, at.IsZero(), "the time the data line was read")
		got = append(got, ev)
	})
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, got, 2)
	require.Equal(t, "7", got[0].ID)
	require.Equal(t, "task_assigned", got[0].Event)
	require.Equal(t, "t1", got[0].Data.EntityUUID)
	require.Equal(t, "2026-12-02T18:00:00.5Z", got[0].Data.At)
	require.Equal(t, "8", got[1].ID)
	require.Equal(t, "mentioned", got[1].Data.Kind)
	require.Equal(t, "c2", got[1].Data.EntityUUID)
}

// Each expected event is matched to its frame by stream, kind and entity: a frame read before
// its call returned counts 0 ms (and as early), one never read counts as missing, and the time
// from the event's own timestamp is kept beside.
func TestDeliveriesPairWritesWithFrames(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	returned := map[string]time.Time{
		arrivalKey(0, "task_assigned", "a"): t0,
		arrivalKey(1, "task_assigned", "a"): t0,
		arrivalKey(2, "task_assigned", "b"): t0,
	}
	arrived := map[string]arrival{
		arrivalKey(0, "task_assigned", "a"): {read: t0.Add(120 * time.Millisecond), written: t0.Add(-30 * time.Millisecond)},
		arrivalKey(1, "task_assigned", "a"): {read: t0.Add(-5 * time.Millisecond)}, // before the call returned; no at
		arrivalKey(2, "task_reopened", "b"): {read: t0},                            // another kind: not the one expected
	}
	d := deliveries(returned, arrived)
	require.ElementsMatch(t, []time.Duration{120 * time.Millisecond, 0}, d.lat)
	require.Equal(t, []time.Duration{150 * time.Millisecond}, d.fromWrite)
	require.Equal(t, 1, d.missing)
	require.Equal(t, 1, d.early)

	s := summarize(d.lat, d.missing)
	lt := latencyTarget(s, d.missing)
	require.False(t, lt.Pass, "a missing event fails the target whatever the p99")
	require.Contains(t, lt.String(), "FAIL event delivery p99")
	require.Contains(t, lt.String(), "1 event(s) never arrived")
	require.True(t, latencyTarget(summary{N: 10, P99Ms: 1000}, 0).Pass, "at the target passes")
	require.False(t, latencyTarget(summary{N: 10, P99Ms: 1000.1}, 0).Pass)
	require.False(t, latencyTarget(summary{}, 0).Pass, "nothing measured does not pass")
}

// arrivals keeps a frame's first arrival only, counts streams that ended, and waitFor returns
// as soon as all expected frames are in.
func TestArrivalsKeepTheFirstFrame(t *testing.T) {
	t.Parallel()
	a := newArrivals()
	t0 := time.Now()
	ev := sseEvent{Event: "task_assigned"}
	ev.Data.Kind, ev.Data.EntityUUID, ev.Data.At = "task_assigned", "t", "2026-12-02T18:00:00Z"
	a.arrive(3, ev, t0)
	a.arrive(3, ev, t0.Add(time.Second)) // sent twice: the first counts
	a.arrive(3, sseEvent{}, t0)          // the stream ended
	got := a.snapshot()
	require.Equal(t, t0, got[arrivalKey(3, "task_assigned", "t")].read)
	require.Equal(t, time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC), got[arrivalKey(3, "task_assigned", "t")].written.UTC())
	require.Equal(t, 1, a.lost())
	done := make(chan struct{})
	go func() {
		a.waitFor(context.Background(), map[string]time.Time{arrivalKey(3, "task_assigned", "t"): t0}, time.Hour)
		close(done)
	}()
	<-done // returns without waiting the hour: everything expected is in
}

// Memory per stream is the streams' cost with Chorus less the clients' own, per stream; the
// target is at most 64 KiB.
func TestStreamMemoryIsTheServersShare(t *testing.T) {
	t.Parallel()
	before := memSample{HeapInuse: 1000, StackInuse: 500, Goroutines: 10}
	after := memSample{HeapInuse: 1000 + 300<<10, StackInuse: 500 + 100<<10, Goroutines: 40}
	d := after.since(before)
	require.Equal(t, memDelta{Bytes: 400 << 10, HeapBytes: 300 << 10, StackBytes: 100 << 10, Goroutines: 30}, d)
	m := &streamMemory{Streams: 10, Chorus: d, Clients: memDelta{Bytes: 50 << 10, Goroutines: 10}}
	require.InDelta(t, 35<<10, m.PerStream(), 1e-9, "(400 - 50) KiB over 10 streams")
	require.InDelta(t, 2.0, m.GoroutinesPerStream(), 1e-9)
	require.True(t, m.target().Pass)
	require.Equal(t, "PASS server memory per open stream: 35 KiB (target <= 64 KiB)", m.target().String())
	m.Chorus.Bytes = 700 << 10
	require.False(t, m.target().Pass, "65 KiB a stream is over")
	require.Contains(t, m.note(), "Chorus keeps 65.0 KiB")
	require.Zero(t, (&streamMemory{}).PerStream(), "no streams, no figure")
	require.False(t, (&streamMemory{}).target().Pass)
}

// The light client reads a stream's head up to its retry: line (the stand-in server's answer
// included), and says what a refused stream answered.
func TestDialSSE(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	reqs := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r, _ := http.ReadRequest(bufio.NewReader(c))
		reqs <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization")
		_, _ = io.WriteString(c, baselineHead)
		body := "id: 1\nevent: mentioned\ndata: {\"kind\":\"mentioned\",\"entityUuid\":\"x\"}\n\n"
		_, _ = fmt.Fprintf(c, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	}()
	c, err := dialSSE(context.Background(), ln.Addr().String(), "/api/events", "cho_k")
	require.NoError(t, err)
	require.Equal(t, "GET /api/events Bearer cho_k", <-reqs)
	var got []sseEvent
	c.read(func(ev sseEvent, _ time.Time) { got = append(got, ev) })
	require.Len(t, got, 2, "the event, then the end")
	require.Equal(t, "x", got[0].Data.EntityUUID)
	require.Equal(t, sseEvent{}, got[1])

	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"Missing or invalid API key"}`)
	}))
	defer refused.Close()
	_, err = dialSSE(context.Background(), strings.TrimPrefix(refused.URL, "http://"), "/api/events", "")
	require.ErrorContains(t, err, "401 Unauthorized")
	require.ErrorContains(t, err, "Missing or invalid API key")
	notSSE := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") }))
	defer notSSE.Close()
	_, err = dialSSE(context.Background(), strings.TrimPrefix(notSSE.URL, "http://"), "/api/events", "")
	require.ErrorContains(t, err, "not text/event-stream")
}

func TestEventsAddrFromTheMCPEndpoint(t *testing.T) {
	t.Parallel()
	addr, path, err := eventsAddr("http://127.0.0.1:8637/api/mcp")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8637", addr)
	require.Equal(t, "/api/events", path)
	addr, _, err = eventsAddr("http://chorus.internal/api/mcp")
	require.NoError(t, err)
	require.Equal(t, "chorus.internal:80", addr)
	_, _, err = eventsAddr("https://chorus.example.com/api/mcp")
	require.ErrorContains(t, err, "plain http only")
}

// A phase with targets prints p95 and max columns and a PASS or FAIL line per target, and is
// not compared with the floors.
func TestTargetPhaseTable(t *testing.T) {
	t.Parallel()
	p := &phaseResult{Name: "Event streams", Detail: true, Rows: []row{{Name: "event delivered", Concurrency: 200,
		summary: summary{N: 400, P50Ms: 80, P95Ms: 190, P99Ms: 210, MaxMs: 230}}},
		Targets: []targetCheck{{Name: "event delivery p99", Value: 210, Limit: 1000, Unit: "ms", Pass: true}}}
	var out bytes.Buffer
	p.writeTable(&out)
	require.Contains(t, out.String(), "| p50 ms | p95 ms | p99 ms | max ms |")
	require.Contains(t, out.String(), "| event delivered | 200 | 400 | 0 | 80.0 | 190.0 | 210.0 | 230.0 | 0.0 |")
	require.Contains(t, out.String(), "- PASS event delivery p99: 210 ms (target <= 1000 ms)")
	require.NotContains(t, out.String(), "No floor was measured")
}
