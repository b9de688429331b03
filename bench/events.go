package bench

import (
	"context"
	"errors"
	"fmt"
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

	col := newArrivals()
	streams, err := b.openEventStreams(ctx, res, agents, addr, path, col)
	if err != nil {
		res.Skipped = "opening the streams failed: " + err.Error()
		return res
	}
	defer closeStreams(streams)
	returned, calls := b.assignAll(ctx, agents, tasks, rounds)
	col.waitFor(ctx, returned, eventWait)
	reportDeliveries(res, n, returned, col, calls)
	if res.Memory == nil && b.o.Endpoint != "" {
		res.Notes = append(res.Notes, "Memory per stream is not measured with --endpoint: the server runs in another process.")
	}
	return res
}

// openEventStreams opens one stream per agent, each reading into col, and, on a stack of the
// bench's own, measures what the open, idle streams cost the process (res.Memory): the clients
// alone first, against a server that keeps no state per connection, then the same clients
// against Chorus; the difference is what Chorus keeps per stream.
func (b *bencher) openEventStreams(ctx context.Context, res *phaseResult, agents []benchAgent, addr, path string,
	col *arrivals) ([]*sseConn, error) {
	n := len(agents)
	var (
		mem *streamMemory
		err error
	)
	if b.o.Endpoint == "" {
		mem, err = measureClientBaseline(ctx, n)
		if err != nil {
			res.Notes = append(res.Notes, "The client-only memory baseline failed: "+err.Error())
		}
	}
	before := sampleMemory()
	connect := &recorder{}
	streams, err := openStreams(ctx, n, func(ctx context.Context, i int) (*sseConn, error) {
		start := time.Now()
		c, err := dialSSE(ctx, addr, path, agents[i].key)
		connect.observe(start, err)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	for i, c := range streams {
		go c.read(func(ev sseEvent, at time.Time) { col.arrive(i, ev, at) })
	}
	if mem != nil {
		time.Sleep(2 * time.Second) // let the streams reach their idle wait
		mem.Chorus = sampleMemory().since(before)
		mem.Streams = n
		res.Memory = mem
		res.Targets = append(res.Targets, mem.target())
		res.Notes = append(res.Notes, mem.note())
	}
	res.Rows = append(res.Rows, row{Name: "open a stream (dial to the retry: line)", Concurrency: streamDialers,
		summary: connect.summary(0)})
	return streams, nil
}

// assignAll makes the phase's writes: round r assigns task i to agent (i+r) mod n, so each round
// gives every agent one task_assigned event (a reassignment in later rounds), eventDrivers calls
// at a time. It returns when each successful call returned, by its expected frame's arrivalKey.
func (b *bencher) assignAll(ctx context.Context, agents []benchAgent, tasks []string, rounds int) (map[string]time.Time, *recorder) {
	type job struct{ agent, task int }
	var jobs []job
	for r := range rounds {
		for i := range tasks {
			jobs = append(jobs, job{agent: (i + r) % len(agents), task: i})
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
	return returned, calls
}

// reportDeliveries adds the delivery rows, figures, target and notes of the events phase.
func reportDeliveries(res *phaseResult, n int, returned map[string]time.Time, col *arrivals, calls *recorder) {
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
	res.Rows = append(res.Rows, row{Name: "chorus_pm_assign_task (the write)", Concurrency: eventDrivers, summary: calls.summary(0)},
		row{Name: "event delivered (write's call returned to frame read)", Concurrency: n, summary: ds},
		row{Name: "event delivered (event's time in its transaction to frame read)", Concurrency: n, summary: ws})
	res.Events = &eventFigures{Streams: n, Events: ds.N, Missing: d.missing, Early: d.early, P50Ms: ds.P50Ms, P95Ms: ds.P95Ms,
		P99Ms: ds.P99Ms, MaxMs: ds.MaxMs, FromWrite: ws}
	res.Targets = append([]targetCheck{latencyTarget(ds, d.missing)}, res.Targets...)
	if lost := col.lost(); lost > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d stream(s) ended before the phase did (the server closed them).", lost))
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Each stream is one agent's GET %s (its own key); the events are "+
		"task_assigned, from chorus_pm_assign_task calls by the admin agent, %d at a time. Delivery is timed from the "+
		"call's return (its write committed) to the frame's data line being read; %d frame(s) were read before "+
		"their call returned (counted as 0 ms): the call returns only after the task workflow has taken in the "+
		"write's result and the task is read back. The last row times the same frames from the event's own time "+
		"(its at, taken inside the write's transaction, so it includes the commit and the rest of the activity). "+
		"The hub numbers events after commit and wakes streams on a signal and a timer (docs/rules.md §7.4).",
		stream.Path, eventDrivers, d.early))
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
