package bench

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// The webhooks phase's goals (issue 23, item 5: deliveries keep up with 50 events a second).
const (
	// hookDrainTarget is the most the deliveries may lag behind once the writes stop: the time
	// from the last write's return to the last delivery's arrival.
	hookDrainTarget = 5 * time.Second
	// hookDrainWait is how long the phase waits for the backlog to drain before it gives up.
	hookDrainWait = 2 * time.Minute
	// hookDrivers bounds the writes in flight at once; the schedule, not this, sets the rate.
	hookDrivers = 16
	// hookTasks is the most tasks the writes go over (two seconds' worth at the rate, so each
	// task sees a write every two seconds; an assignment alternates its task between two agents,
	// so every write changes its task and writes one event).
	hookTasks = 100
	// hookAllow is what the started server's webhook allow-list lets through: the receiver.
	hookAllow = "127.0.0.1/32"
)

// The writes the webhooks phase makes (--webhook-writes).
const (
	// hookWritesComment comments on the project's tasks: a store transaction each (comments are
	// records, no workflow), so the stack can write the rate and the deliveries are measured.
	hookWritesComment = "comment"
	// hookWritesAssign reassigns the project's tasks: a task workflow's update each, so the
	// deliveries compete with lifecycle work for the worker.
	hookWritesAssign = "assign"
)

// hookTool is the tool the writes call.
func hookTool(writes string) string {
	if writes == hookWritesAssign {
		return "chorus_pm_assign_task"
	}
	return "chorus_add_comment"
}

// ---- webhooks ----

// webhooksPhase adds one webhook to a project of its own, pointed at a receiver on 127.0.0.1
// (the started server's allow-list admits it), then writes --webhook-rate events a second for
// --webhook-seconds through MCP (chorus_add_comment on the project's tasks, a comment_added event
// each; or, with --webhook-writes assign, chorus_pm_assign_task, a task_assigned event each) and
// measures each delivery's lag (the event's time in its write's transaction to the
// receiver reading it), whether every event is delivered, and how long the backlog takes to drain
// once the writes stop.
func (b *bencher) webhooksPhase(ctx context.Context) *phaseResult {
	rate, secs := b.o.WebhookRate, b.o.WebhookSeconds
	res := &phaseResult{Name: fmt.Sprintf("Webhook deliveries: %d events a second for %d s", rate, secs), Detail: true}
	if b.t.st == nil {
		res.Skipped = "needs the app database to add the webhook and count the events (pass --database-url with --endpoint)"
		return res
	}
	if b.o.Endpoint != "" {
		res.Skipped = "needs a stack of the bench's own: the receiver is on 127.0.0.1, which only the started server's " +
			"webhook allow-list admits"
		return res
	}
	var project mcp.CreatedProject
	if err := b.admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "bench webhooks " +
		time.Now().UTC().Format(time.RFC3339)}, &project); err != nil {
		res.Skipped = "create the webhook project: " + err.Error()
		return res
	}
	recv := newHookReceiver()
	srv := httptest.NewServer(recv) // 127.0.0.1
	defer srv.Close()
	hook, err := b.addWebhook(ctx, project.UUID, srv.URL+"/hook")
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	agents, err := b.t.newAgents(ctx, "bench hook target", perm.DeveloperAgent, 2)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	nTasks := min(hookTasks, max(2*rate, 2))
	tasks, err := b.createTasks(ctx, b.admin, project.UUID, nTasks, "webhooks")
	if err != nil {
		res.Skipped = "creating the tasks failed: " + err.Error()
		return res
	}
	res.Notes = append(res.Notes, b.settleNote(ctx, tasks))
	// Only the events of the measured writes count: any the setup made are passed over.
	from, err := b.t.st.SequenceEvents(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	recv.measure(hook.secret, from)

	w := b.hookWrites(ctx, recv, tasks, agents)

	// The events the writes made, as the store numbered them: what the webhook must deliver.
	events, err := b.countProjectEvents(ctx, project.UUID, from)
	if err != nil {
		res.Notes = append(res.Notes, "Counting the project's events failed: "+err.Error())
		events = w.written()
	}
	drainedAt := recv.waitFor(ctx, events, hookDrainWait)
	samples := w.stopSampling()
	r := recv.result()

	cs := w.calls.summary(w.wall)
	res.Rows = append(res.Rows, row{Name: hookTool(b.o.WebhookWrites) + " (the writes)", Concurrency: hookDrivers, summary: cs})
	ls := summarize(r.lag, 0)
	if r.lastAt.After(r.firstAt) {
		ls.WallS = r.lastAt.Sub(r.firstAt).Seconds()
		ls.Rate = float64(ls.N) / ls.WallS
	}
	res.Rows = append(res.Rows, row{Name: "delivery lag (event's time to receiver)", Concurrency: 1, summary: ls})
	f := hookFigures{Writes: b.o.WebhookWrites, Rate: rate, Seconds: secs, Calls: cs.N, WriteRate: cs.Rate, Events: events, Delivered: r.delivered,
		Duplicates: r.duplicates, BadSignature: r.bad, P50Ms: ls.P50Ms, P95Ms: ls.P95Ms, P99Ms: ls.P99Ms, MaxMs: ls.MaxMs,
		Backlog: samples}
	if !drainedAt.IsZero() && w.lastReturn.Load() != 0 {
		f.DrainSeconds = max(drainedAt.Sub(time.Unix(0, w.lastReturn.Load())), 0).Seconds()
	} else {
		f.DrainSeconds = -1
	}
	res.Webhooks = &f
	res.Targets = append(res.Targets, f.targets()...)
	res.Notes = append(res.Notes, f.note(hookDrivers))
	return res
}

// hookRun is the webhooks phase's writes under way: their calls, how many succeeded and when
// the last returned, and the backlog sampled once a second until stopSampling.
type hookRun struct {
	calls      *recorder
	ok         atomic.Int64
	lastReturn atomic.Int64 // unix nanos
	wall       time.Duration
	samples    []hookSample
	stop, done chan struct{}
}

func (w *hookRun) written() int { return int(w.ok.Load()) }

// stopSampling stops the backlog samples and returns them.
func (w *hookRun) stopSampling() []hookSample {
	close(w.stop)
	<-w.done
	return w.samples
}

// hookWrites makes the phase's writes: job i, due at start + i/rate, writes on task
// i mod len(tasks) (a comment, or an assignment to agent (i / len(tasks)) mod 2), hookDrivers at
// most in flight, one at a time per task. It returns once they are all made, the backlog samples
// still running.
func (b *bencher) hookWrites(ctx context.Context, recv *hookReceiver, tasks []string, agents []benchAgent) *hookRun {
	rate, nTasks := b.o.WebhookRate, len(tasks)
	total := rate * b.o.WebhookSeconds
	w := &hookRun{calls: &recorder{}, stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.samples = append(w.samples, hookSample{Seconds: time.Since(start).Seconds(), Written: w.written(),
					Delivered: recv.count()})
			}
		}
	}()
	jobs := make(chan int)
	go func() {
		defer close(jobs)
		for i := range total {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	lastTask := make([]sync.Mutex, nTasks) // one write per task at a time, so each alternation is a change
	parallel(hookDrivers, func(int) {
		for i := range jobs {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
			}
			k := i % nTasks
			lastTask[k].Lock()
			t0 := time.Now()
			var err error
			if b.o.WebhookWrites == hookWritesAssign {
				err = b.admin.Call(ctx, "chorus_pm_assign_task", map[string]any{"taskUuid": tasks[k],
					"agentUuid": agents[(i/nTasks)%2].uuid}, nil)
			} else {
				err = b.admin.Call(ctx, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": tasks[k],
					"content": fmt.Sprintf("bench webhook event %d", i+1)}, nil)
			}
			w.calls.observe(t0, err)
			lastTask[k].Unlock()
			if err == nil {
				w.ok.Add(1)
				w.lastReturn.Store(time.Now().UnixNano())
			}
		}
	})
	w.wall = time.Since(start)
	return w
}

// countProjectEvents counts the numbered events of project after seq from.
func (b *bencher) countProjectEvents(ctx context.Context, project string, from int64) (int, error) {
	if _, err := b.t.st.SequenceEvents(ctx); err != nil {
		return 0, err
	}
	n := 0
	for {
		evs, err := b.t.st.EventsAfter(ctx, b.t.company.UUID, from, 1000, store.EventFilter{Projects: []string{project}})
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return n, nil
		}
		n += len(evs)
		from = evs[len(evs)-1].Seq
	}
}

// hookSample is the backlog once a second while the writes run.
type hookSample struct {
	Seconds   float64 `json:"seconds"`
	Written   int     `json:"written"`
	Delivered int     `json:"delivered"`
}

// hookFigures are the webhooks phase's figures in the JSON file.
type hookFigures struct {
	Writes       string  `json:"writes"` // hookWritesComment or hookWritesAssign
	Rate         int     `json:"rate"`   // events a second asked for
	Seconds      int     `json:"seconds"`
	Calls        int     `json:"calls"`     // successful writes
	WriteRate    float64 `json:"writeRate"` // achieved, per second
	Events       int     `json:"events"`    // the project's events the writes made (the store's count)
	Delivered    int     `json:"delivered"` // distinct deliveries the receiver got
	Duplicates   int     `json:"duplicates"`
	BadSignature int     `json:"badSignature"`
	// DrainSeconds is from the last write's return to the last delivery; -1 when the backlog did
	// not drain within hookDrainWait.
	DrainSeconds float64      `json:"drainSeconds"`
	P50Ms        float64      `json:"p50Ms"`
	P95Ms        float64      `json:"p95Ms"`
	P99Ms        float64      `json:"p99Ms"`
	MaxMs        float64      `json:"maxMs"`
	Backlog      []hookSample `json:"backlog,omitempty"`
}

// targets: the writes reached the rate asked (within 10%: below it, the stack's writes and not
// the webhooks set the pace), every event delivered with a good signature, and the backlog
// drained within hookDrainTarget of the last write.
func (f hookFigures) targets() []targetCheck {
	rate := targetCheck{Name: "events written a second", Value: f.WriteRate, Limit: float64(f.Rate) * 0.9, AtLeast: true,
		Unit: "/s", Pass: f.Rate > 0 && f.WriteRate >= float64(f.Rate)*0.9}
	if !rate.Pass {
		rate.Detail = fmt.Sprintf("of %d asked: the stack's writes, not the webhooks, set the pace", f.Rate)
	}
	all := targetCheck{Name: "events delivered", Value: float64(f.Delivered), Limit: float64(f.Events), AtLeast: true,
		Unit: "events", Pass: f.Events > 0 && f.Delivered == f.Events && f.BadSignature == 0}
	if f.BadSignature > 0 {
		all.Detail = fmt.Sprintf("%d with a signature that does not verify", f.BadSignature)
	}
	drain := targetCheck{Name: "backlog drained after the last write", Value: f.DrainSeconds, Limit: hookDrainTarget.Seconds(),
		Unit: "s", Pass: f.DrainSeconds >= 0 && f.DrainSeconds <= hookDrainTarget.Seconds()}
	if f.DrainSeconds < 0 {
		drain.Detail = fmt.Sprintf("not drained within %s", hookDrainWait)
	}
	return []targetCheck{rate, all, drain}
}

// maxBacklog is the largest written-but-not-delivered count sampled.
func (f hookFigures) maxBacklog() int {
	m := 0
	for _, s := range f.Backlog {
		m = max(m, s.Written-s.Delivered)
	}
	return m
}

func (f hookFigures) note(drivers int) string {
	return fmt.Sprintf("%d writes (%s, up to %d in flight, each due at its slot of %d a second) made "+
		"%d events of the webhook's project; the receiver (127.0.0.1, allowed by the started server's webhook "+
		"allow-list) got %d distinct deliveries, %d repeated, %d with a bad signature. The backlog (written, not yet "+
		"delivered) peaked at %d in the once-a-second samples. Lag is from the event's time (its at, taken in the write's "+
		"transaction) to the receiver reading the request.", f.Calls, hookTool(f.Writes), drivers, f.Rate, f.Events, f.Delivered, f.Duplicates,
		f.BadSignature, f.maxBacklog())
}

// ---- the receiver ----

// hookBody is what the receiver reads of a delivery's body: its id and its event.
type hookBody struct {
	ID    string          `json:"id"`
	Event store.EventWire `json:"event"`
}

// hookReceiver is the webhook's receiver: it answers 204 to every request and keeps, per
// delivery id (the Chorus-Webhook-Id header), the first arrival and the lag from the event's time.
type hookReceiver struct {
	mu      sync.Mutex
	secret  string
	after   int64 // deliveries of events with seq <= after are not counted
	before  int   // how many such came
	seen    map[string]bool
	lag     []time.Duration
	dup     int
	bad     int
	first   time.Time
	last    time.Time
	arrived chan struct{}
}

func newHookReceiver() *hookReceiver {
	return &hookReceiver{seen: map[string]bool{}, arrived: make(chan struct{}, 1), after: math.MaxInt64}
}

// measure starts counting: deliveries must verify under secret ("" checks none), and only
// those of events numbered after seq after count.
func (h *hookReceiver) measure(secret string, after int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secret, h.after = secret, after
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	w.WriteHeader(http.StatusNoContent)
	var hb hookBody
	if err == nil {
		err = json.Unmarshal(body, &hb)
	}
	id := r.Header.Get("Chorus-Webhook-Id")
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || id == "" || (h.secret != "" && !verifyHook(h.secret, r.Header.Get("Chorus-Timestamp"),
		r.Header.Get("Chorus-Signature"), body)) {
		h.bad++
		return
	}
	if seq, err := strconv.ParseInt(hb.Event.ID, 10, 64); err != nil || seq <= h.after {
		h.before++
		return
	}
	if h.seen[id] {
		h.dup++
		return
	}
	h.seen[id] = true
	if h.first.IsZero() {
		h.first = at
	}
	h.last = at
	if written, err := time.Parse(time.RFC3339Nano, hb.Event.At); err == nil {
		h.lag = append(h.lag, max(at.Sub(written), 0))
	}
	select {
	case h.arrived <- struct{}{}:
	default:
	}
}

// verifyHook checks a delivery's signature as docs/rules.md §7.5 tells a receiver to: "v1=" and
// the hex HMAC-SHA256 of "<timestamp>.<body>" under the secret (one of comma-separated values).
func verifyHook(secret, timestamp, signature string, body []byte) bool {
	if _, err := strconv.ParseInt(timestamp, 10, 64); err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	for _, got := range strings.Split(signature, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(got)), []byte(want)) {
			return true
		}
	}
	return false
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// hookResult is what the receiver saw.
type hookResult struct {
	delivered, duplicates, bad int
	lag                        []time.Duration
	firstAt, lastAt            time.Time
}

func (h *hookReceiver) result() hookResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return hookResult{delivered: len(h.seen), duplicates: h.dup, bad: h.bad, lag: append([]time.Duration(nil), h.lag...),
		firstAt: h.first, lastAt: h.last}
}

// waitFor waits until n distinct deliveries arrived and returns when the last of them did; zero
// when timeout passes (or ctx ends) first.
func (h *hookReceiver) waitFor(ctx context.Context, n int, timeout time.Duration) time.Time {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		got, last := len(h.seen), h.last
		h.mu.Unlock()
		if got >= n {
			return last
		}
		select {
		case <-ctx.Done():
			return time.Time{}
		case <-deadline.C:
			return time.Time{}
		case <-h.arrived:
		case <-time.After(200 * time.Millisecond):
		}
	}
}
