package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/stream"
)

// The events phase's targets (issue 23, item 5).
const (
	// eventP99Target is the most an event may take, p99, from its write's MCP call returning to
	// its subscriber reading the frame, with --streams streams open.
	eventP99Target = time.Second
	// streamMemTarget is the most server memory one open, idle stream may cost.
	streamMemTarget = 64 << 10
	// eventDrivers is how many assignments the phase has in flight at once.
	eventDrivers = 4
	// eventWait is how long the phase waits, after the last write returned, for frames still due.
	eventWait = 30 * time.Second
)

// ---- events ----

// eventsPhase opens --streams event streams (GET /api/events), one per agent of its own, measures
// what the open, idle streams cost the server's memory, then assigns tasks to those agents
// through MCP (chorus_pm_assign_task: a task workflow's update, its write activity, the
// notification and its event in the write's transaction, as in production) and times each
// event from the assign call's return to its frame being read by the agent's stream.
func (b *bencher) eventsPhase(ctx context.Context) *phaseResult {
	n, rounds := b.o.Streams, b.o.EventRounds
	res := &phaseResult{Name: fmt.Sprintf("Event streams: %d open streams, %d assignment(s) each", n, rounds), Detail: true}
	agents, err := b.t.newAgents(ctx, "bench listener", perm.DeveloperAgent, n)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	tasks, err := b.createMany(ctx, n, "events")
	if err != nil {
		res.Skipped = "creating the tasks failed: " + err.Error()
		return res
	}
	res.Notes = append(res.Notes, b.settleNote(ctx, tasks))
	addr, path, err := eventsAddr(b.t.url)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}

	// Memory: the clients alone first (against a server that keeps no state per connection), then
	// the same clients against Chorus; the difference is what Chorus keeps per stream.
	var mem *streamMemory
	if b.o.Endpoint == "" {
		mem, err = measureClientBaseline(ctx, n)
		if err != nil {
			res.Notes = append(res.Notes, "The client-only memory baseline failed: "+err.Error())
		}
	}
	col := newArrivals()
	before := sampleMemory()
	connect := &recorder{}
	streams, err := openStreams(ctx, n, func(ctx context.Context, i int) (*sseConn, error) {
		start := time.Now()
		c, err := dialSSE(ctx, addr, path, agents[i].key)
		connect.observe(start, err)
		return c, err
	})
	if err != nil {
		res.Skipped = "opening the streams failed: " + err.Error()
		return res
	}
	defer closeStreams(streams)
	for i, c := range streams {
		go c.read(func(ev sseEvent, at time.Time) { col.arrive(i, ev, at) })
	}
	if mem != nil {
		time.Sleep(2 * time.Second) // let the streams reach their idle wait
		mem.Chorus = sampleMemory().since(before)
		mem.Streams = n
		res.Memory = mem
	}
	cs := connect.summary(0)
	res.Rows = append(res.Rows, row{Name: "open a stream (dial to the retry: line)", Concurrency: streamDialers, summary: cs})

	// Deliveries: round r assigns task i to agent (i+r) mod n, so each round gives every agent
	// one task_assigned event (a reassignment in later rounds).
	type job struct{ agent, task int }
	var jobs []job
	for r := range rounds {
		for i := range tasks {
			jobs = append(jobs, job{agent: (i + r) % n, task: i})
		}
	}
	returned := make(map[string]time.Time, len(jobs))
	var mu sync.Mutex
	calls := &recorder{}
	next := make(chan job)
	go func() {
		defer close(next)
		for _, j := range jobs {
			select {
			case next <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	parallel(eventDrivers, func(int) {
		for j := range next {
			start := time.Now()
			err := b.admin.Call(ctx, "chorus_pm_assign_task", map[string]any{"taskUuid": tasks[j.task],
				"agentUuid": agents[j.agent].uuid}, nil)
			calls.observe(start, err)
			if err == nil {
				mu.Lock()
				returned[arrivalKey(j.agent, "task_assigned", tasks[j.task])] = time.Now()
				mu.Unlock()
			}
		}
	})
	col.waitFor(ctx, returned, eventWait)
	d := deliveries(returned, col.snapshot())
	ds := summarize(d.lat, d.missing)
	if ds.WallS = calls.summary(0).WallS; ds.WallS > 0 {
		ds.Rate = float64(ds.N) / ds.WallS
	}
	if d.missing > 0 {
		ds.Error = fmt.Sprintf("%d event(s) not read within %s of the last write", d.missing, eventWait)
	}
	ws := summarize(d.fromWrite, 0)
	ws.WallS, ws.Rate = ds.WallS, ds.Rate
	cl := calls.summary(0)
	res.Rows = append(res.Rows, row{Name: "chorus_pm_assign_task (the write)", Concurrency: eventDrivers, summary: cl},
		row{Name: "event delivered (write's call returned to frame read)", Concurrency: n, summary: ds},
		row{Name: "event delivered (event's time in its transaction to frame read)", Concurrency: n, summary: ws})
	res.Events = &eventFigures{Streams: n, Events: ds.N, Missing: d.missing, Early: d.early, P50Ms: ds.P50Ms, P95Ms: ds.P95Ms,
		P99Ms: ds.P99Ms, MaxMs: ds.MaxMs, FromWrite: ws}
	res.Targets = append(res.Targets, latencyTarget(ds, d.missing))
	if mem != nil {
		res.Targets = append(res.Targets, mem.target())
		res.Notes = append(res.Notes, mem.note())
	} else if b.o.Endpoint != "" {
		res.Notes = append(res.Notes, "Memory per stream is not measured with --endpoint: the server runs in another process.")
	}
	if lost := col.lost(); lost > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d stream(s) ended before the phase did (the server closed them).", lost))
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Each stream is one agent's GET %s (its own key); the events are "+
		"task_assigned, from chorus_pm_assign_task calls by the admin agent, %d at a time. Delivery is timed from the "+
		"call's return (its write committed) to the frame's data line being read; %d frame(s) were read before "+
		"their call returned (counted as 0 ms): the call returns only after the task workflow has taken in the "+
		"write's result and the task is read back. The last row times the same frames from the event's own time "+
		"(its at, taken inside the write's transaction, so it includes the commit and the rest of the activity). The hub numbers events after commit and wakes streams on a signal "+
		"and a timer (docs/rules.md §7.4).", stream.Path, eventDrivers, d.early))
	return res
}

// eventFigures are the events phase's figures in the JSON file.
type eventFigures struct {
	Streams int     `json:"streams"`
	Events  int     `json:"events"`  // frames read
	Missing int     `json:"missing"` // events whose frame was not read in time
	Early   int     `json:"early"`   // frames read before their write's call returned
	P50Ms   float64 `json:"p50Ms"`
	P95Ms   float64 `json:"p95Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	// FromWrite is the same frames timed from the event's own time (its "at", taken inside the
	// write's transaction), which the call's return can come well after.
	FromWrite summary `json:"fromEventTime"`
}

// latencyTarget checks delivery p99 against eventP99Target; a missing event fails it.
func latencyTarget(s summary, missing int) targetCheck {
	limit := float64(eventP99Target.Milliseconds())
	t := targetCheck{Name: "event delivery p99", Limit: limit, Value: s.P99Ms, Unit: "ms", Pass: s.N > 0 && missing == 0 && s.P99Ms <= limit}
	if missing > 0 {
		t.Detail = fmt.Sprintf("%d event(s) never arrived", missing)
	}
	return t
}

// ---- delivery bookkeeping ----

// arrivalKey names one expected frame: stream i's event of kind on entity.
func arrivalKey(stream int, kind, entity string) string {
	return fmt.Sprintf("%d/%s/%s", stream, kind, entity)
}

// arrivals collects when each stream read each frame (the first time, should one come twice).
type arrivals struct {
	mu     sync.Mutex
	at     map[string]arrival
	ended  int
	notify chan struct{}
}

// arrival is when a frame was read, and when its event was written (its "at", the time inside
// the write's transaction; zero when the frame has none).
type arrival struct{ read, written time.Time }

func newArrivals() *arrivals {
	return &arrivals{at: map[string]arrival{}, notify: make(chan struct{}, 1)}
}

func (a *arrivals) arrive(stream int, ev sseEvent, at time.Time) {
	if ev.Event == "" {
		a.mu.Lock()
		a.ended++ // the stream ended
		a.mu.Unlock()
		return
	}
	k := arrivalKey(stream, ev.Data.Kind, ev.Data.EntityUUID)
	written, _ := time.Parse(time.RFC3339Nano, ev.Data.At)
	a.mu.Lock()
	if _, ok := a.at[k]; !ok {
		a.at[k] = arrival{read: at, written: written}
	}
	a.mu.Unlock()
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

func (a *arrivals) lost() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ended
}

func (a *arrivals) snapshot() map[string]arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]arrival, len(a.at))
	for k, v := range a.at {
		out[k] = v
	}
	return out
}

// waitFor waits until every key of want has arrived, or timeout passes, or ctx ends.
func (a *arrivals) waitFor(ctx context.Context, want map[string]time.Time, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		done := true
		for k := range want {
			if _, ok := a.at[k]; !ok {
				done = false
				break
			}
		}
		a.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-a.notify:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// delivery is what deliveries found.
type delivery struct {
	lat       []time.Duration // from the write's call returning to the frame read
	fromWrite []time.Duration // from the event's time in its transaction to the frame read
	missing   int             // expected frames never read
	early     int             // frames read before their write's call returned (latency 0)
}

// deliveries pairs each write's return time with its frame's arrival: the latency of each frame
// read (0 when it came before the call returned), the time from the event's own timestamp (when
// the frame has one), and how many never came.
func deliveries(returned map[string]time.Time, arrived map[string]arrival) delivery {
	var d delivery
	for k, ret := range returned {
		a, ok := arrived[k]
		if !ok {
			d.missing++
			continue
		}
		lat := a.read.Sub(ret)
		if lat < 0 {
			d.early++
			lat = 0
		}
		d.lat = append(d.lat, lat)
		if !a.written.IsZero() {
			d.fromWrite = append(d.fromWrite, max(a.read.Sub(a.written), 0))
		}
	}
	return d
}

// ---- a light SSE client ----

// streamDialers is how many streams are opened at once.
const streamDialers = 16

// eventsAddr is the host:port and path of the stream of the Chorus whose MCP endpoint is mcpURL.
func eventsAddr(mcpURL string) (addr, path string, err error) {
	u, err := url.Parse(mcpURL)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("the MCP endpoint %q is not a URL with a host", mcpURL)
	}
	if u.Scheme != "http" {
		return "", "", fmt.Errorf("the events phase's light client speaks plain http only, not %s (%s)", u.Scheme, mcpURL)
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return addr, stream.Path, nil
}

// sseConn is one open stream, kept as light as a client can be so that the memory the phase
// measures is the server's: a raw connection, the response read through a small bufio reader,
// and one goroutine (read) per stream.
type sseConn struct {
	conn net.Conn
	body *bufio.Reader
}

// sseEvent is one frame: its event name and its data (an event of GET /api/events).
type sseEvent struct {
	ID, Event string
	Data      store.EventWire
}

// dialSSE opens GET path on addr with key and reads up to the stream's first "retry:" line: by
// then the server has subscribed the stream (app.OpenEvents), so every later event reaches it.
func dialSSE(ctx context.Context, addr, path, key string) (*sseConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n"
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		conn.Close()
		return nil, err
	}
	c, err := readSSEHead(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// readSSEHead reads the response head and the body up to the first retry: line.
func readSSEHead(conn net.Conn) (*sseConn, error) {
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s %s", stream.Path, resp.Status, strings.TrimSpace(string(b)))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return nil, fmt.Errorf("GET %s: Content-Type %q, not text/event-stream", stream.Path, ct)
	}
	c := &sseConn{conn: conn, body: bufio.NewReaderSize(resp.Body, 512)}
	for {
		line, err := c.body.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("GET %s: the stream ended before its retry: line: %w", stream.Path, err)
		}
		if strings.HasPrefix(line, "retry:") {
			return c, nil
		}
	}
}

// read calls got with each event frame and the time its data line was read, until the stream
// ends; then once more with a zero sseEvent.
func (c *sseConn) read(got func(sseEvent, time.Time)) {
	defer got(sseEvent{}, time.Now())
	_ = parseSSE(c.body, got)
}

// parseSSE reads frames from r: comments and retry lines are passed over, and each frame with
// an event name is handed to got with the time its data line was read. It returns r's error.
func parseSSE(r *bufio.Reader, got func(sseEvent, time.Time)) error {
	var (
		ev sseEvent
		at time.Time
	)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Event != "" {
				got(ev, at)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			at = time.Now()
			_ = json.Unmarshal([]byte(line[len("data: "):]), &ev.Data)
		}
	}
}

func (c *sseConn) close() { _ = c.conn.Close() }

// openStreams opens n streams, streamDialers at a time; on an error it closes what it opened.
func openStreams(ctx context.Context, n int, open func(context.Context, int) (*sseConn, error)) ([]*sseConn, error) {
	out := make([]*sseConn, n)
	errs := make([]error, n)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range n {
			next <- i
		}
	}()
	parallel(min(streamDialers, n), func(int) {
		for i := range next {
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				continue
			}
			out[i], errs[i] = open(ctx, i)
		}
	})
	if err := errors.Join(errs...); err != nil {
		closeStreams(out)
		return nil, err
	}
	return out, nil
}

func closeStreams(cs []*sseConn) {
	for _, c := range cs {
		if c != nil {
			c.close()
		}
	}
}

// ---- memory ----

// memSample is the process's memory in use after a collection.
type memSample struct {
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Goroutines int    `json:"goroutines"`
}

// sampleMemory collects garbage (twice: finalizers run in between) and reads the memory in use.
func sampleMemory() memSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Goroutines: runtime.NumGoroutine()}
}

// memDelta is what a set of open streams added to the process: bytes (heap and stacks, which
// hold the goroutines) and goroutines. Bytes may be negative when other work freed more.
type memDelta struct {
	Bytes      int64 `json:"bytes"`
	HeapBytes  int64 `json:"heapBytes"`
	StackBytes int64 `json:"stackBytes"`
	Goroutines int   `json:"goroutines"`
}

func (m memSample) since(before memSample) memDelta {
	heap := int64(m.HeapInuse) - int64(before.HeapInuse)
	stack := int64(m.StackInuse) - int64(before.StackInuse)
	return memDelta{Bytes: heap + stack, HeapBytes: heap, StackBytes: stack, Goroutines: m.Goroutines - before.Goroutines}
}

// streamMemory is the events phase's memory figures: the streams' cost to the whole process
// (client and server, both in the bench's process), the clients' own cost measured the same way
// against a server that keeps nothing per connection, and the difference per stream.
type streamMemory struct {
	Streams int      `json:"streams"`
	Clients memDelta `json:"clientsOnly"`
	Chorus  memDelta `json:"withChorus"`
}

// PerStream is the server's bytes per open stream: (with Chorus - clients only) / streams.
func (m *streamMemory) PerStream() float64 {
	if m.Streams == 0 {
		return 0
	}
	return float64(m.Chorus.Bytes-m.Clients.Bytes) / float64(m.Streams)
}

// GoroutinesPerStream is the server's goroutines per open stream.
func (m *streamMemory) GoroutinesPerStream() float64 {
	if m.Streams == 0 {
		return 0
	}
	return float64(m.Chorus.Goroutines-m.Clients.Goroutines) / float64(m.Streams)
}

func (m *streamMemory) target() targetCheck {
	return targetCheck{Name: "server memory per open stream", Value: m.PerStream() / 1024, Limit: streamMemTarget / 1024,
		Unit: "KiB", Pass: m.Streams > 0 && m.PerStream() <= streamMemTarget}
}

func (m *streamMemory) note() string {
	per := float64(max(m.Streams, 1))
	return fmt.Sprintf("Memory (heap in use + stacks in use, after GC, the streams idle 2 s): %d streams added %.1f KiB "+
		"each to the bench's process (heap %.1f, stacks %.1f; %.2f goroutines each); the same clients against a server "+
		"that keeps nothing per connection added %.1f KiB each (%.2f goroutines), so Chorus keeps %.1f KiB and %.2f "+
		"goroutines per open stream. The clients run in the same process: one goroutine and a 512-byte reader each.",
		m.Streams, float64(m.Chorus.Bytes)/1024/per, float64(m.Chorus.HeapBytes)/1024/per, float64(m.Chorus.StackBytes)/1024/per,
		float64(m.Chorus.Goroutines)/per, float64(m.Clients.Bytes)/1024/per, float64(m.Clients.Goroutines)/per,
		m.PerStream()/1024, m.GoroutinesPerStream())
}

// baselineHead is the stand-in server's whole answer: the head of GET /api/events and its first
// chunk, the retry: line.
var baselineHead = func() string {
	body := "retry: 2000\n\n"
	return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
}()

// measureClientBaseline opens n of the phase's clients against a stand-in SSE server that
// answers each connection with a stream head and a retry: line and then keeps only the
// connection (no goroutine, no buffer), and measures what they add to the process.
func measureClientBaseline(ctx context.Context, n int) (*streamMemory, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, baselineHead)
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	before := sampleMemory()
	cs, err := openStreams(ctx, n, func(ctx context.Context, _ int) (*sseConn, error) {
		return dialSSE(ctx, ln.Addr().String(), stream.Path, "")
	})
	if err != nil {
		return nil, err
	}
	defer closeStreams(cs)
	for _, c := range cs {
		go c.read(func(sseEvent, time.Time) {})
	}
	time.Sleep(2 * time.Second)
	return &streamMemory{Clients: sampleMemory().since(before)}, nil
}

// ---- agents ----

// benchAgent is an agent the bench created: its uuid and key.
type benchAgent struct{ uuid, key string }

// newAgents creates n agents of role, each with its own key, through the store.
func (t *benchTarget) newAgents(ctx context.Context, prefix, role string, n int) ([]benchAgent, error) {
	if t.st == nil {
		return nil, errors.New("needs the app database to create agents (pass --database-url)")
	}
	out := make([]benchAgent, n)
	for i := range out {
		a, key, err := t.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: t.company.UUID, Name: fmt.Sprintf("%s %d", prefix, i+1),
			Roles: []string{role}, OwnerUUID: &t.owner.UUID})
		if err != nil {
			return nil, err
		}
		out[i] = benchAgent{uuid: a.UUID, key: key}
	}
	return out, nil
}
