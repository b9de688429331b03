// Package runner is `chorus agent run`: it follows each configured agent's event stream
// (GET /api/events, issue 23) and, when an event needs the agent, runs a configured command (a
// headless coding agent such as `claude -p`, or any script) with a prompt built from the events
// and the role's playbook (the server's MCP prompts).
//
// Turns are serialized per idea (an event without an idea: per entity); events that arrive
// while a turn of their idea runs are coalesced into that idea's next turn; at most
// MaxConcurrent turns run at once; a turn that outlives TurnTimeout is killed with its whole
// process group. A journal in the agent's state directory (append-only JSON lines, synced)
// records each turn's start and finish, so a restarted runner resumes the stream where every
// earlier event was handled, runs again a turn cut short by a crash, and never runs a finished
// turn twice. On a state directory with no journal yet the runner first runs one catch-up turn
// (Agent.NoCatchUp turns it off): the agent re-reads its state and takes up the work given to
// it before the runner connected, which no event it reads names. The runner only listens: it
// calls no tool and never polls.
//
// It knows the wire format of the event stream and the MCP prompts by name; it imports mcpclient
// (to fetch prompts) and vocab only.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options are the settings a run's agents share.
type Options struct {
	// DryRun prints each turn (command, workdir, environment, prompt) to Out instead of running
	// it, and writes nothing (no journal, no lock, no turn files).
	DryRun bool
	Out    io.Writer
	// Log receives one line per turn started and finished, and the stream's state.
	Log *slog.Logger
	// Grace is how long a stopping runner waits for running turns before killing them
	// (DefaultGrace when 0).
	Grace time.Duration
	// Playbooks gives an agent's playbook source (default: MCP prompts/get as the agent).
	Playbooks func(Agent) Playbooks
	// HTTPClient reads the event streams (default: one without a timeout).
	HTTPClient *http.Client
	// IdleTimeout is how long a stream may carry nothing, not even a heartbeat, before it is
	// taken as dropped and reopened (DefaultIdleTimeout when 0).
	IdleTimeout time.Duration

	// taken, in tests, is told of each event once the runner has taken it (and started what it can).
	taken func(agent string, e Event)
}

// Defaults of Options.
const (
	DefaultGrace       = 30 * time.Second
	DefaultIdleTimeout = 45 * time.Second // three missed heartbeats (the server sends one every 15 s)
	defaultRetry       = 2 * time.Second  // until the server's retry: says otherwise
)

// Outcomes of a turn.
const (
	OutcomeOK          = "ok"          // the command exited 0
	OutcomeFailed      = "failed"      // it exited with another status
	OutcomeTimeout     = "timeout"     // it outlived the turn timeout and was killed
	OutcomeError       = "error"       // it could not be started
	OutcomeInterrupted = "interrupted" // the runner stopped and killed it: it runs again next time
	OutcomeDryRun      = "dry_run"
)

// Run serves agents until ctx ends, then stops taking events, waits up to Options.Grace for
// running turns, kills those still running and returns nil. Each agent's state directory is
// prepared and locked first, so a problem with any agent is reported before anything runs. It
// returns an error when an agent's stream is refused for good (a revoked key, an unknown kind)
// or its journal cannot be written; the other agents are stopped as on ctx's end.
func Run(ctx context.Context, agents []Agent, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Playbooks == nil {
		o.Playbooks = func(a Agent) Playbooks { return NewMCPPlaybooks(a.URL+"/api/mcp", a.Key) }
	}
	out := &lockedWriter{w: o.Out}
	keys := make([]string, len(agents))
	for i, a := range agents {
		keys[i] = a.Key
	}
	var runners []*agentRunner
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, a := range agents {
		r, err := newAgentRunner(a, &o, out, keys)
		if err != nil {
			return fmt.Errorf("agent %s: %w", a.Name, err)
		}
		runners = append(runners, r)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			if err := r.run(ctx); err != nil {
				cancel(fmt.Errorf("agent %s: %w", r.a.Name, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// lockedWriter lets several agents print dry-run plans without interleaving them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) print(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s)
}

// agentRunner serves one agent: its stream, its turns, its journal.
type agentRunner struct {
	a   Agent
	o   *Options
	out *lockedWriter
	log *slog.Logger
	pb  Playbooks
	// keys are the keys of every agent the runner serves: no turn's environment holds them
	// beyond its own CHORUS_API_KEY.
	keys []string
	j    *journal // nil in a dry run
	// unlock releases the state directory.
	unlock func()
	start  resumeState

	mu      sync.Mutex
	groups  map[string]*group
	ready   []*group // groups with pending events and no running turn, waiting for a slot, oldest first
	running int
	// catchingUp: a catch-up turn runs; no other turn starts until it ends, so it and an event
	// turn cannot take up the same work at once.
	catchingUp  bool
	outstanding map[int64]bool // seqs taken and not finished (pending or running)
	finished    map[int64]bool // seqs of finished turns above the cursor: skipped when replayed
	highest     int64          // the highest seq seen
	known       bool           // a position is known (from the journal or an event): the cursor means something
	lastTurn    int
	stopping    bool
	failed      error // a journal write failed: the runner stops
	fail        context.CancelCauseFunc

	turns sync.WaitGroup
	// killCtx ends when the grace period after a stop is over: running turns are killed.
	killCtx context.Context
	kill    context.CancelFunc
}

// group is the turns of one idea (or entity): at most one runs; events wait in pending.
type group struct {
	key     string
	pending []Event
	running bool
	queued  bool
}

func newAgentRunner(a Agent, o *Options, out *lockedWriter, keys []string) (*agentRunner, error) {
	r := &agentRunner{a: a, o: o, out: out, log: o.Log.With("agent", a.Name), pb: o.Playbooks(a), keys: keys, unlock: func() {},
		groups: map[string]*group{}, outstanding: map[int64]bool{}}
	r.killCtx, r.kill = context.WithCancel(context.Background())
	if !o.DryRun {
		if err := os.MkdirAll(a.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("stateDir: %w", err)
		}
		if err := ignoreInGit(a.StateDir); err != nil {
			return nil, fmt.Errorf("stateDir: %w", err)
		}
		unlock, err := lockStateDir(a.StateDir)
		if err != nil {
			return nil, err
		}
		r.unlock = unlock
	}
	st, err := readJournal(a.StateDir)
	if err != nil {
		r.close()
		return nil, err
	}
	if !o.DryRun {
		if err := compactJournal(a.StateDir, st); err != nil {
			r.close()
			return nil, fmt.Errorf("compact the journal: %w", err)
		}
		if r.j, err = openJournal(a.StateDir); err != nil {
			r.close()
			return nil, err
		}
	}
	r.start = st
	r.finished, r.highest, r.known, r.lastTurn = st.finished, st.highest, st.hasCursor, st.lastTurn
	return r, nil
}

// ignoreInGit writes <dir>/.gitignore holding "*" unless a .gitignore is there: the state
// directory, by default inside the workdir (a checkout the agent commits from), then stays out of
// every commit, with its turn logs (whatever a turn printed) and prompts.
func ignoreInGit(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString("# chorus agent run's state (journal, prompts, turn logs): never commit it\n*\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *agentRunner) close() {
	if r.j != nil {
		_ = r.j.close()
		r.j = nil
	}
	r.unlock()
	r.unlock = func() {}
	r.kill()
}

// run follows the stream until ctx ends or the stream is refused, then stops (see Run).
func (r *agentRunner) run(ctx context.Context) error {
	ctx, r.fail = context.WithCancelCause(ctx)
	st := r.start
	if len(st.unfinished) > 0 || st.catchUp {
		r.log.Info("resuming turns the runner stopped during", "eventIds", seqList(st.unfinished), "catchUp", st.catchUp)
	}
	firstStart := st.fresh && !r.a.NoCatchUp
	if firstStart {
		r.log.Info("no journal yet in the state directory: running a catch-up turn for the work given to the agent before the runner started",
			"stateDir", r.a.StateDir)
	}
	r.mu.Lock()
	for _, e := range st.unfinished {
		r.take(e)
	}
	switch {
	case st.catchUp:
		r.take(Event{Kind: GapKind, Reason: st.catchUpReason})
	case firstStart:
		r.take(Event{Kind: GapKind, Reason: CatchUpFirstStart})
	}
	r.schedule()
	r.mu.Unlock()

	s := &stream{origin: r.a.URL, key: r.a.Key, kinds: r.a.Kinds, client: r.o.HTTPClient, log: r.log,
		idle: r.o.IdleTimeout, retry: defaultRetry, hasLast: st.hasCursor, lastID: strconv.FormatInt(st.cursor, 10)}
	s.connected = func() {
		if s.hasLast {
			r.log.Info("following the event stream", "url", r.a.URL+"/api/events", "lastEventId", s.lastID)
		} else {
			r.log.Info("following the event stream from its newest event", "url", r.a.URL+"/api/events")
		}
	}
	err := s.follow(ctx, r.handle)
	r.stop()
	if err == nil {
		err = context.Cause(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return r.failed
	}
	return err
}

// stop takes no more events, waits up to the grace period for running turns, then kills them.
func (r *agentRunner) stop() {
	r.mu.Lock()
	r.stopping = true
	r.ready = nil
	n := r.running
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.turns.Wait(); close(done) }()
	if n > 0 {
		r.log.Info("stopping: waiting for running turns", "turns", n, "grace", r.o.Grace)
	}
	select {
	case <-done:
	case <-time.After(r.o.Grace):
		r.log.Warn("stopping: the grace period is over; killing the running turns (they run again next time)")
		r.kill()
		<-done
	}
}

// handle takes one event from the stream.
func (r *agentRunner) handle(e Event) {
	if r.o.taken != nil {
		defer r.o.taken(r.a.Name, e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return
	}
	if e.Kind != GapKind {
		if r.finished[e.Seq] || r.outstanding[e.Seq] {
			r.log.Debug("skipping an event already handled or queued", "event", e.ID, "kind", e.Kind)
			return
		}
		if !slices.Contains(r.a.Kinds, e.Kind) {
			r.highest, r.known = max(r.highest, e.Seq), true
			return
		}
	} else {
		r.log.Warn("the event stream lost events (pruned before the runner read them): running a catch-up turn")
	}
	r.take(e)
	r.schedule()
}

// take queues an event in its group (r.mu held).
func (r *agentRunner) take(e Event) {
	if e.Kind != GapKind {
		r.outstanding[e.Seq] = true
		r.highest, r.known = max(r.highest, e.Seq), true
	}
	key := groupOf(e)
	g := r.groups[key]
	if g == nil {
		g = &group{key: key}
		r.groups[key] = g
	}
	if e.Kind == GapKind && slices.ContainsFunc(g.pending, func(p Event) bool { return p.Kind == GapKind }) {
		return // one catch-up covers every gap
	}
	g.pending = append(g.pending, e)
	if !g.running && !g.queued {
		g.queued = true
		r.ready = append(r.ready, g)
	}
}

// cursor is the stream position below which every event is finished or not needed (r.mu held);
// nil when no position is known yet.
func (r *agentRunner) cursor() *int64 {
	if !r.known {
		return nil
	}
	c := r.highest
	for seq := range r.outstanding {
		c = min(c, seq-1)
	}
	return &c
}

// schedule starts the turns of waiting groups while slots are free (r.mu held).
func (r *agentRunner) schedule() {
	for !r.stopping && r.failed == nil && !r.catchingUp && r.running < r.a.MaxConcurrent && len(r.ready) > 0 {
		g := r.ready[0]
		r.ready = r.ready[1:]
		g.queued = false
		events := g.pending
		r.catchingUp = slices.ContainsFunc(events, func(e Event) bool { return e.Kind == GapKind })
		g.pending = nil
		r.lastTurn++
		t := &turn{id: fmt.Sprintf("%06d", r.lastTurn), group: g.key, events: events}
		if r.j != nil {
			err := r.j.append(Record{Type: turnStarted, Turn: t.id, Group: g.key, Events: events, Cursor: r.cursor(), At: time.Now().UTC()})
			if err != nil {
				r.abort(err)
				return
			}
		}
		g.running = true
		r.running++
		r.turns.Add(1)
		go r.runTurn(t, g)
	}
}

// abort stops the runner after a journal write failed: running on without a journal could run
// a turn twice (r.mu held).
func (r *agentRunner) abort(err error) {
	r.failed = fmt.Errorf("%w; stopping so that no turn runs twice", err)
	r.log.Error("cannot write the journal", "error", err)
	r.fail(r.failed)
}

// runTurn runs a turn and records how it ended.
func (r *agentRunner) runTurn(t *turn, g *group) {
	defer r.turns.Done()
	res := r.execute(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	g.running = false
	r.running--
	if slices.ContainsFunc(t.events, func(e Event) bool { return e.Kind == GapKind }) {
		r.catchingUp = false
	}
	if res.outcome != OutcomeInterrupted {
		for _, e := range t.events {
			if e.Kind != GapKind {
				delete(r.outstanding, e.Seq)
				r.finished[e.Seq] = true
			}
		}
		c := r.cursor()
		if r.j != nil {
			rec := Record{Type: turnFinished, Turn: t.id, Outcome: res.outcome, Cursor: c, At: time.Now().UTC()}
			if res.exitCode >= 0 {
				rec.ExitCode = &res.exitCode
			}
			if err := r.j.append(rec); err != nil {
				r.abort(err)
				return
			}
		}
		if c != nil {
			for seq := range r.finished {
				if seq <= *c {
					delete(r.finished, seq)
				}
			}
		}
	}
	if len(g.pending) > 0 && !g.queued {
		g.queued = true
		r.ready = append(r.ready, g)
	}
	r.schedule()
}

// seqList is the ids of events, comma-separated ("" for a catch-up alone).
func seqList(events []Event) string {
	var ids []string
	for _, e := range events {
		if e.Kind != GapKind {
			ids = append(ids, e.ID)
		}
	}
	return strings.Join(ids, ",")
}
