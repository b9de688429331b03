// Package bench is the harness of `chorus bench` (make bench; docs/performance.md): it measures
// Chorus the way agents use it, MCP clients (package mcpclient, one session and one API key per
// simulated agent) calling the lifecycle tools, against "floors" (a bare workflow of its own on
// the same Temporal server, floor.go) measured in the same run. Its phases (phases.go, soak.go,
// opscheck.go) seed what they need (agents and projects through the store, read-only tasks
// straight into the database with store.SeedReadTasks), print a Markdown table each (stats.go)
// and write every figure, with the machine and the surface (surface.go), to one JSON file.
//
// Run takes the flags of `chorus bench` as Options; cmd/chorus binds them and fills in Wiring,
// through which the bench starts a Chorus process for a stack of its own (with the Temporal dev
// server, package workflows/devserver) and dials Temporal: Wiring is all it takes from the command.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// The phases of `chorus bench`, in the order they run.
const (
	phaseFloors   = "floors"
	phaseSingle   = "single"
	phaseAgents   = "agents"
	phaseRace     = "race"
	phaseReads    = "reads"
	phaseBulk     = "bulk"
	phaseEvents   = "events"
	phaseWebhooks = "webhooks"
	// Long phases, run only when named.
	phaseSoak     = "soak"
	phaseOpsCheck = "opscheck"
)

// AllPhases are the phases a run has when --phases names none, in the order they run.
var AllPhases = []string{phaseFloors, phaseSingle, phaseAgents, phaseRace, phaseReads, phaseBulk, phaseEvents, phaseWebhooks}

// namedPhases run only when --phases names them.
var namedPhases = []string{phaseSoak, phaseOpsCheck}

// Options are the flags of `chorus bench` (its --help says what each one means); Run checks them.
type Options struct {
	Phases      string // comma-separated phase names, or "all"
	Agents      int
	TasksPer    int
	Rounds      int
	Racers      int
	RaceRounds  int
	ReadTasks   int
	ReadLarge   int // 0: no large read project
	ReadCalls   int
	BulkBatches int
	BulkSize    int
	FloorOps    int
	FloorPer    int
	// events phase: open streams, and assignments per stream
	Streams     int
	EventRounds int
	// webhooks phase: events a second, for how many seconds
	WebhookRate    int
	WebhookSeconds int
	WebhookWrites  string // "comment" (also when empty) or "assign"
	JSONPath       string // "" writes no JSON file
	DatabaseURL    string
	// Endpoint, Key and TemporalAddress measure a running Chorus instead of a stack of the bench's own.
	Endpoint        string
	Key             string
	TemporalAddress string
	Namespace       string
	DynamicConfig   []string // KEY=VALUE for the started dev server
	PprofAddr       string
	Keep            bool
	SeedLive        bool
	// soak phase
	SoakAgents    int
	SoakDuration  time.Duration
	SoakWindow    time.Duration
	SoakSample    time.Duration
	PruneInterval time.Duration
	// opscheck phase
	OpsEntities    int
	OpsConcurrency int
	// soaking: the soak phase runs, so the started stack prunes with its window.
	soaking bool
	// webhooks: the webhooks phase runs, so the started stack admits its receiver.
	webhooks bool
}

// Wiring is what the bench takes from the chorus command (cmd/chorus): its version, the Chorus
// server process it starts for a stack of its own, and its way to dial Temporal.
type Wiring struct {
	// Version names the bench's MCP client in the handshake (chorus --version).
	Version string
	// Serve runs one Chorus process, API and worker (chorus serve --role all), on st as s says
	// until ctx ends, and calls ready once it serves.
	Serve func(ctx context.Context, log *slog.Logger, st *store.Store, s Server, ready func()) error
	// DialTemporal connects to the Temporal frontend at address, in namespace, retrying until it
	// answers or wait passes.
	DialTemporal func(ctx context.Context, log *slog.Logger, address, namespace string, wait time.Duration) (client.Client, error)
}

// Server is the Chorus process of the stack the bench starts.
type Server struct {
	Addr            string // HTTP listen address, host:port
	TemporalAddress string
	Namespace       string
	TemporalWait    time.Duration // how long to wait for Temporal to answer at start
	PprofAddr       string        // "": no profiles
	// Retention and PruneInterval are the pruning the soak phase sets (zero: the defaults); Soak
	// lets the journal's window be below the namespace's retention
	// (activities.Activities.NoNamespaceFloor).
	Retention     store.Retention
	PruneInterval time.Duration
	Soak          bool
	// WebhookAllow is the server's webhook allow-list (its --webhook-allow): the webhooks phase
	// admits its receiver on 127.0.0.1.
	WebhookAllow string
}

// validate checks the flags and returns the phases to run.
func (o *Options) validate() ([]string, error) {
	var phases []string
	for p := range strings.SplitSeq(o.Phases, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p == "all" {
			phases = append(phases, AllPhases...)
			continue
		}
		if !slices.Contains(AllPhases, p) && !slices.Contains(namedPhases, p) {
			return nil, fmt.Errorf("--phases: unknown phase %q (choose from %s)", p, strings.Join(append(slices.Clone(AllPhases), namedPhases...), ", "))
		}
		phases = append(phases, p)
	}
	if len(phases) == 0 {
		return nil, errors.New("--phases: name at least one phase")
	}
	positive := []struct {
		name string
		v    int
	}{{"--agents", o.Agents}, {"--tasks-per-agent", o.TasksPer}, {"--rounds", o.Rounds}, {"--race-rounds", o.RaceRounds},
		{"--read-tasks", o.ReadTasks}, {"--read-calls", o.ReadCalls}, {"--bulk-batches", o.BulkBatches},
		{"--floor-ops", o.FloorOps}, {"--floor-per-client", o.FloorPer}}
	more, err := o.eventFlags(phases)
	if err != nil {
		return nil, err
	}
	positive = append(positive, more...)
	// The named phases' flags count only when their phase runs.
	if slices.Contains(phases, phaseSoak) {
		positive = append(positive, struct {
			name string
			v    int
		}{"--soak-agents", o.SoakAgents})
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"--soak-duration", o.SoakDuration}, {"--soak-window", o.SoakWindow}, {"--soak-sample", o.SoakSample},
			{"--prune-interval", o.PruneInterval}} {
			if d.v <= 0 {
				return nil, fmt.Errorf("%s must be a positive duration (e.g. 30s, 5m, 1h), not %s", d.name, d.v)
			}
		}
	}
	if slices.Contains(phases, phaseOpsCheck) {
		positive = append(positive, []struct {
			name string
			v    int
		}{{"--ops-entities", o.OpsEntities}, {"--ops-concurrency", o.OpsConcurrency}}...)
	}
	for _, p := range positive {
		if p.v < 1 {
			return nil, fmt.Errorf("%s must be at least 1, not %d", p.name, p.v)
		}
	}
	if o.Racers < 2 {
		return nil, fmt.Errorf("--racers must be at least 2, not %d", o.Racers)
	}
	if o.ReadLarge < 0 {
		return nil, fmt.Errorf("--read-tasks-large must be 0 (off) or a task count, not %d", o.ReadLarge)
	}
	if o.BulkSize < 1 || o.BulkSize > 100 {
		return nil, fmt.Errorf("--bulk-size must be 1 to 100 (chorus_create_tasks' limit), not %d", o.BulkSize)
	}
	for _, kv := range o.DynamicConfig {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--dynamic-config %q is not KEY=VALUE", kv)
		}
	}
	if o.Endpoint == "" {
		for name, v := range map[string]string{"--key": o.Key, "--temporal-address": o.TemporalAddress} {
			if v != "" {
				return nil, fmt.Errorf("%s only applies with --endpoint (without it the bench starts its own stack)", name)
			}
		}
	} else {
		if !strings.HasPrefix(o.Endpoint, "http://") && !strings.HasPrefix(o.Endpoint, "https://") {
			return nil, fmt.Errorf("--endpoint %q must be an http:// or https:// URL", o.Endpoint)
		}
		if !strings.HasPrefix(o.Key, "cho_") {
			return nil, errors.New("--endpoint needs --key cho_... (an admin agent's API key)")
		}
		if len(o.DynamicConfig) > 0 || o.PprofAddr != "" {
			return nil, errors.New("--dynamic-config and --pprof-addr apply only to the stack the bench starts, not with --endpoint")
		}
		if slices.Contains(phases, phaseReads) && o.DatabaseURL != "" && !o.SeedLive {
			return nil, errors.New("--phases reads with --endpoint and --database-url would seed a project of tasks without " +
				"workflows into that live database (chorus ops check then lists each as missing-workflow, and agents can " +
				"find them); leave out the reads phase, or pass --seed-live-database to a Chorus you can throw away")
		}
	}
	if o.SeedLive && o.Endpoint == "" {
		return nil, errors.New("--seed-live-database only applies with --endpoint")
	}
	return phases, nil
}

// eventFlags checks the flags of the events and webhooks phases, when they run, and returns
// those that must be at least 1.
func (o *Options) eventFlags(phases []string) ([]struct {
	name string
	v    int
}, error) {
	var positive []struct {
		name string
		v    int
	}
	if slices.Contains(phases, phaseEvents) {
		positive = append(positive, []struct {
			name string
			v    int
		}{{"--streams", o.Streams}, {"--event-rounds", o.EventRounds}}...)
		if o.EventRounds > o.Streams && o.Streams > 0 {
			return nil, fmt.Errorf("--event-rounds (%d) must not exceed --streams (%d): each round reassigns every task to the next agent", o.EventRounds, o.Streams)
		}
	}
	if slices.Contains(phases, phaseWebhooks) {
		positive = append(positive, []struct {
			name string
			v    int
		}{{"--webhook-rate", o.WebhookRate}, {"--webhook-seconds", o.WebhookSeconds}}...)
		if o.WebhookWrites == "" {
			o.WebhookWrites = hookWritesComment
		}
		if o.WebhookWrites != hookWritesComment && o.WebhookWrites != hookWritesAssign {
			return nil, fmt.Errorf("--webhook-writes must be %s or %s, not %q", hookWritesComment, hookWritesAssign, o.WebhookWrites)
		}
	}
	return positive, nil
}

// Run checks o, then runs the phases it names against the Chorus it says (a stack of its own,
// started through w, unless o.Endpoint is set), printing a Markdown table per phase to out and
// writing every figure to o.JSONPath.
func Run(ctx context.Context, o Options, w Wiring, out io.Writer) error {
	phases, err := o.validate()
	if err != nil {
		return err
	}
	return run(ctx, o, phases, w, out)
}

func run(ctx context.Context, o Options, phases []string, w Wiring, out io.Writer) error {
	started := time.Now()
	var (
		t   *benchTarget
		err error
	)
	o.soaking = slices.Contains(phases, phaseSoak)
	o.webhooks = slices.Contains(phases, phaseWebhooks)
	if o.Endpoint == "" {
		t, err = startBenchStack(ctx, o, w, out)
	} else {
		t, err = connectBenchTarget(ctx, o)
	}
	if err != nil {
		return err
	}
	defer t.close()

	reads := []int{o.ReadTasks}
	if o.ReadLarge > 0 {
		reads = append(reads, o.ReadLarge)
	}
	rep := &benchReport{Started: started.UTC(), Machine: thisMachine(), Floors: map[string]summary{},
		Target: map[string]any{"endpoint": t.url, "temporal": t.temporalAddress, "namespace": t.namespace, "database": t.database,
			"startedByBench": o.Endpoint == ""},
		Settings: benchSettings{Phases: phases, Agents: o.Agents, TasksPerAgent: o.TasksPer, Rounds: o.Rounds, Racers: o.Racers,
			RaceRounds: o.RaceRounds, ReadTasks: reads, ReadCalls: o.ReadCalls, BulkBatches: o.BulkBatches, BulkSize: o.BulkSize,
			FloorOps: o.FloorOps, FloorPer: o.FloorPer, Streams: o.Streams, EventRounds: o.EventRounds,
			WebhookRate: o.WebhookRate, WebhookSecs: o.WebhookSeconds, WebhookWrites: o.WebhookWrites, DynamicConfig: devserver.DynamicConfig}}
	m := rep.Machine
	fmt.Fprintf(out, "bench: %d CPU(s) %s, %s %s/%s, load average %s\n", m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.Arch, m.LoadAvgStart)
	if rep.Surface, err = PrintSurface(out); err != nil {
		return err
	}

	b := &bencher{o: o, w: w, t: t, floors: rep.Floors}
	defer b.close()
	admin, err := connectAgent(ctx, t.url, t.adminKey, w.Version)
	if err != nil {
		return err
	}
	defer closeAgents([]*mcpclient.Agent{admin})
	b.admin = admin
	var project mcp.CreatedProject
	if err := admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "bench " + started.UTC().Format(time.RFC3339)}, &project); err != nil {
		return fmt.Errorf("create the bench project: %w", err)
	}
	b.project = project.UUID

	var windows []phaseWindow
	for _, p := range phases {
		fmt.Fprintf(out, "bench: phase %s...\n", p)
		failed := workerTaskFailures(ctx, t.metricsURL)
		if n := len(windows); n > 0 {
			windows[n-1].to, windows[n-1].failedTo = time.Now(), failed
		}
		windows = append(windows, phaseWindow{from: time.Now(), to: time.Now().Add(time.Hour), failedFrom: failed})
		res := b.phase(ctx, p, reads)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep.Phases = append(rep.Phases, res)
		windows[len(windows)-1].res = res
		res.Started, res.Ended = windows[len(windows)-1].from.UTC(), time.Now().UTC()
		res.writeTable(out)
	}
	rep.Soak = b.soak
	if n := len(windows); n > 0 {
		windows[n-1].failedTo = workerTaskFailures(ctx, t.metricsURL)
	}
	b.reportWorkflowTaskFailures(ctx, started, windows, out)
	rep.Seconds = time.Since(started).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()
	fmt.Fprintf(out, "\nbench: load average at the end %s\n", rep.Machine.LoadAvgEnd)
	if o.JSONPath != "" {
		bs, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.JSONPath, append(bs, '\n'), 0o644); err != nil {
			return fmt.Errorf("--json %s: %w", o.JSONPath, err)
		}
		fmt.Fprintf(out, "\nbench: figures written to %s (%.0f s in all)\n", o.JSONPath, rep.Seconds)
	}
	return nil
}

// phase runs the phase named p (reads: the read projects' sizes).
func (b *bencher) phase(ctx context.Context, p string, reads []int) *phaseResult {
	switch p {
	case phaseFloors:
		return b.floorsPhase(ctx)
	case phaseSingle:
		return b.singlePhase(ctx)
	case phaseAgents:
		return b.agentsPhase(ctx)
	case phaseRace:
		return b.racePhase(ctx)
	case phaseReads:
		return b.readsPhase(ctx, reads)
	case phaseBulk:
		return b.bulkPhase(ctx)
	case phaseEvents:
		return b.eventsPhase(ctx)
	case phaseWebhooks:
		return b.webhooksPhase(ctx)
	case phaseSoak:
		return b.soakPhase(ctx)
	case phaseOpsCheck:
		return b.opsCheckPhase(ctx)
	}
	return nil // validate admits no other name
}

// bencher holds what the phases share.
type bencher struct {
	o       Options
	t       *benchTarget
	w       Wiring
	admin   *mcpclient.Agent
	project string
	floors  map[string]summary
	devs    []*mcpclient.Agent // developer agents, created on first need
	tc      client.Client
	soak    []soakSample // the soak phase's samples, for the JSON file
}

// developers returns n developer agents (created and connected once, then reused).
func (b *bencher) developers(ctx context.Context, n int) ([]*mcpclient.Agent, error) {
	if len(b.devs) >= n {
		return b.devs[:n], nil
	}
	keys, err := b.t.newDevelopers(ctx, "bench developer", n-len(b.devs))
	if err != nil {
		return nil, err
	}
	more, err := connectAgents(ctx, b.t.url, b.w.Version, keys)
	if err != nil {
		return nil, err
	}
	b.devs = append(b.devs, more...)
	return b.devs[:n], nil
}

func (b *bencher) close() {
	closeAgents(b.devs)
	if b.tc != nil {
		b.tc.Close()
	}
}

// temporal is the bench's own Temporal client (for the floors and to watch task workflows),
// dialled on first use.
func (b *bencher) temporal(ctx context.Context) (client.Client, error) {
	if b.tc != nil {
		return b.tc, nil
	}
	if b.t.temporalAddress == "" {
		return nil, errors.New("no Temporal address (pass --temporal-address with --endpoint)")
	}
	tc, err := b.w.DialTemporal(ctx, benchLogger(), b.t.temporalAddress, b.t.namespace, 30*time.Second)
	if err != nil {
		return nil, err
	}
	b.tc = tc
	return tc, nil
}

// settle waits until the workflow of every task in ids has run its first workflow task, so a
// phase does not measure the backlog its own setup left on the task queue. It returns how long
// that took, or an error when it cannot tell (no Temporal address) or timeout passes.
func (b *bencher) settle(ctx context.Context, ids []string, timeout time.Duration) (time.Duration, error) {
	tc, err := b.temporal(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	pending := slices.Clone(ids)
	for len(pending) > 0 {
		var still []string
		for _, id := range pending {
			d, err := tc.DescribeWorkflowExecution(ctx, vocab.TaskID(id), "")
			// Started and WorkflowTaskScheduled are the first two events; a third means a worker took it.
			if err != nil || d.GetWorkflowExecutionInfo().GetHistoryLength() < 3 {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("%d of %d task workflows had not started after %s", len(pending), len(ids), timeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}
