package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// The phases of `chorus bench`, in the order they run.
const (
	phaseFloors = "floors"
	phaseSingle = "single"
	phaseAgents = "agents"
	phaseRace   = "race"
	phaseReads  = "reads"
	phaseBulk   = "bulk"
	// Long phases, run only when named.
	phaseSoak     = "soak"
	phaseOpsCheck = "opscheck"
)

var allPhases = []string{phaseFloors, phaseSingle, phaseAgents, phaseRace, phaseReads, phaseBulk}

// namedPhases run only when --phases names them.
var namedPhases = []string{phaseSoak, phaseOpsCheck}

type benchOptions struct {
	phases      string
	agents      int
	tasksPer    int
	rounds      int
	racers      int
	raceRounds  int
	readTasks   int
	readLarge   int
	readCalls   int
	bulkBatches int
	bulkSize    int
	floorOps    int
	floorPer    int
	jsonPath    string
	databaseURL string
	endpoint    string
	key         string
	temporal    string
	namespace   string
	dynConfig   []string
	pprofAddr   string
	keep        bool
	seedLive    bool
	surface     bool
	// soak phase
	soakAgents    int
	soakDuration  time.Duration
	soakWindow    time.Duration
	soakSample    time.Duration
	pruneInterval time.Duration
	// opscheck phase
	opsEntities    int
	opsConcurrency int
	// soaking: the soak phase runs, so the started stack prunes with its window.
	soaking bool
}

func newBenchCmd() *cobra.Command {
	o := benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test Chorus over MCP and compare it with bare Temporal floors (what `make bench` runs)",
		Long: `Measure Chorus the way agents use it: MCP clients (one session and one API key per simulated
agent) calling the lifecycle tools over Streamable HTTP, and, against the same Temporal server in
the same run, "floors": a bare workflow of the bench's own on its own task queue, updated with a
no-op local activity, a no-op activity, and created by update-with-start.

By default it starts the whole stack itself, as chorus dev does, on free ports in a temporary
directory: the Temporal dev server, SQLite (or --database-url for PostgreSQL), the worker and the
MCP endpoint. With --endpoint and --key it measures a running Chorus instead; --temporal-address
then enables the floors, and --database-url (the app database of that Chorus) lets it create the
developer agents and seed the read-only project.

Phases (--phases, comma-separated; default all):
  floors  bare Temporal: update+local activity, update+activity, update-with-start; then the same
          with --agents concurrent clients
  single  one agent, one call at a time: create a task, claim, in_progress, report work, submit,
          mark criteria, verify; create and claim an idea
  agents  --agents agents each working --tasks-per-agent tasks at once (claim, in_progress, submit)
  race    --racers agents claim the same task at once: one must win, the rest be refused
  reads   get_task, list_tasks (first and deep page), get_unblocked_tasks on a project of
          --read-tasks seeded tasks (and --read-tasks-large, when set). The seeded rows are written
          straight to the database with no workflow behind them, in a project that no command
          touches: reads come from the database only, so they measure the same thing.
  bulk    chorus_create_tasks in batches of --bulk-size, tasks per second

Run only when named:
  soak      --soak-agents agents claim and release for --soak-duration, each call with its own
            requestId, while the stack prunes with a --soak-window retention every
            --prune-interval; it samples the sizes of the requestId ledger and the change journal
            and says whether they stay flat (default: the hour the issue asks; a short one:
            --soak-duration 4m --soak-window 30s --prune-interval 10s --soak-sample 10s)
  opscheck  --ops-entities open tasks seeded into the database, each task's workflow started
            from its rows as ops repair starts one (default 100000), then a full chorus ops check pass, an incremental pass,
            20 claims and another incremental pass (--ops-concurrency entities at once), with
            the 1,000,000 estimate

It first prints the surface (what reaches the model from tools/list and the instructions, per
preset and per toolset; docs/rules.md §3.3), which needs no stack: --surface prints only that.
Then it prints a Markdown table per phase and writes every figure to --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.surface {
				_, err := printSurface(cmd.OutOrStdout())
				return err
			}
			phases, err := o.validate()
			if err != nil {
				return err
			}
			return runBench(cmd.Context(), o, phases, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.phases, "phases", strings.Join(allPhases, ","), "phases to run, comma-separated: "+strings.Join(allPhases, ", "))
	f.IntVar(&o.agents, "agents", 50, "simulated agents working at once (agents phase) and the concurrency of the concurrent floors")
	f.IntVar(&o.tasksPer, "tasks-per-agent", 2, "tasks each agent works in the agents phase")
	f.IntVar(&o.rounds, "rounds", 10, "rounds of the single-agent lifecycle")
	f.IntVar(&o.racers, "racers", 20, "agents racing for one task in the race phase")
	f.IntVar(&o.raceRounds, "race-rounds", 3, "tasks raced for")
	f.IntVar(&o.readTasks, "read-tasks", 10000, "tasks seeded for the reads phase")
	f.IntVar(&o.readLarge, "read-tasks-large", 0, "a second, larger read project (e.g. 100000); 0 skips it")
	f.IntVar(&o.readCalls, "read-calls", 30, "calls per read tool and size")
	f.IntVar(&o.bulkBatches, "bulk-batches", 6, "chorus_create_tasks calls in the bulk phase")
	f.IntVar(&o.bulkSize, "bulk-size", 50, "tasks per chorus_create_tasks call in the bulk phase (1 to 100)")
	f.IntVar(&o.floorOps, "floor-ops", 100, "sequential operations per floor")
	f.IntVar(&o.floorPer, "floor-per-client", 10, "operations per client of the concurrent floors")
	f.StringVar(&o.jsonPath, "json", "bench-results.json", "write every figure, with the machine, to this JSON file (empty: none)")
	f.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL URL for the app database (default: SQLite in the temporary directory); "+
		"with --endpoint, the database of the Chorus being measured")
	f.StringVar(&o.endpoint, "endpoint", "", "measure this running MCP endpoint (http://host:port/api/mcp) instead of starting one")
	f.StringVar(&o.key, "key", "", "with --endpoint: an admin agent's API key (cho_...)")
	f.StringVar(&o.temporal, "temporal-address", "", "with --endpoint: host:port of that Chorus's Temporal frontend, for the floors")
	f.StringVar(&o.namespace, "namespace", workflows.Namespace, "Temporal namespace")
	f.StringArrayVar(&o.dynConfig, "dynamic-config", nil, "KEY=VALUE passed to the started dev server as --dynamic-config-value (repeatable), "+
		"e.g. history.transferProcessorMaxPollRPS=1000")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "serve the started Chorus's profiles (net/http/pprof) on this address while the bench runs")
	f.BoolVar(&o.surface, "surface", false, "print only the model-facing surface per preset and toolset (no stack, a second) and exit")
	f.BoolVar(&o.keep, "keep", false, "keep the temporary directory (databases, Temporal log) after the run")
	f.IntVar(&o.soakAgents, "soak-agents", 8, "soak phase: agents claiming and releasing at once")
	f.DurationVar(&o.soakDuration, "soak-duration", time.Hour, "soak phase: how long the agents work")
	f.DurationVar(&o.soakWindow, "soak-window", 5*time.Minute, "soak phase: the ledger's and journal's retention the started stack prunes with")
	f.DurationVar(&o.soakSample, "soak-sample", 30*time.Second, "soak phase: how often the table sizes are sampled")
	f.DurationVar(&o.pruneInterval, "prune-interval", 30*time.Second, "soak phase: how often the started stack prunes")
	f.IntVar(&o.opsEntities, "ops-entities", 100000, "opscheck phase: open tasks seeded into the database, each with its workflow started from its rows")
	f.IntVar(&o.opsConcurrency, "ops-concurrency", 8, "opscheck phase: entities chorus ops check compares at once")
	f.BoolVar(&o.seedLive, "seed-live-database", false, "with --endpoint: let the reads phase write its seeded project (tasks without "+
		"workflows, which chorus ops check then lists) into the measured Chorus's database")
	return cmd
}

// validate checks the flags and returns the phases to run.
func (o *benchOptions) validate() ([]string, error) {
	var phases []string
	for p := range strings.SplitSeq(o.phases, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p == "all" {
			phases = append(phases, allPhases...)
			continue
		}
		if !slices.Contains(allPhases, p) && !slices.Contains(namedPhases, p) {
			return nil, fmt.Errorf("--phases: unknown phase %q (choose from %s)", p, strings.Join(append(slices.Clone(allPhases), namedPhases...), ", "))
		}
		phases = append(phases, p)
	}
	if len(phases) == 0 {
		return nil, errors.New("--phases: name at least one phase")
	}
	positive := []struct {
		name string
		v    int
	}{{"--agents", o.agents}, {"--tasks-per-agent", o.tasksPer}, {"--rounds", o.rounds}, {"--race-rounds", o.raceRounds},
		{"--read-tasks", o.readTasks}, {"--read-calls", o.readCalls}, {"--bulk-batches", o.bulkBatches},
		{"--floor-ops", o.floorOps}, {"--floor-per-client", o.floorPer}}
	// The named phases' flags count only when their phase runs.
	if slices.Contains(phases, phaseSoak) {
		positive = append(positive, struct {
			name string
			v    int
		}{"--soak-agents", o.soakAgents})
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"--soak-duration", o.soakDuration}, {"--soak-window", o.soakWindow}, {"--soak-sample", o.soakSample},
			{"--prune-interval", o.pruneInterval}} {
			if d.v <= 0 {
				return nil, fmt.Errorf("%s must be a positive duration (e.g. 30s, 5m, 1h), not %s", d.name, d.v)
			}
		}
	}
	if slices.Contains(phases, phaseOpsCheck) {
		positive = append(positive, []struct {
			name string
			v    int
		}{{"--ops-entities", o.opsEntities}, {"--ops-concurrency", o.opsConcurrency}}...)
	}
	for _, p := range positive {
		if p.v < 1 {
			return nil, fmt.Errorf("%s must be at least 1, not %d", p.name, p.v)
		}
	}
	if o.racers < 2 {
		return nil, fmt.Errorf("--racers must be at least 2, not %d", o.racers)
	}
	if o.readLarge < 0 {
		return nil, fmt.Errorf("--read-tasks-large must be 0 (off) or a task count, not %d", o.readLarge)
	}
	if o.bulkSize < 1 || o.bulkSize > 100 {
		return nil, fmt.Errorf("--bulk-size must be 1 to 100 (chorus_create_tasks' limit), not %d", o.bulkSize)
	}
	for _, kv := range o.dynConfig {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--dynamic-config %q is not KEY=VALUE", kv)
		}
	}
	if o.endpoint == "" {
		for name, v := range map[string]string{"--key": o.key, "--temporal-address": o.temporal} {
			if v != "" {
				return nil, fmt.Errorf("%s only applies with --endpoint (without it the bench starts its own stack)", name)
			}
		}
	} else {
		if !strings.HasPrefix(o.endpoint, "http://") && !strings.HasPrefix(o.endpoint, "https://") {
			return nil, fmt.Errorf("--endpoint %q must be an http:// or https:// URL", o.endpoint)
		}
		if !strings.HasPrefix(o.key, "cho_") {
			return nil, errors.New("--endpoint needs --key cho_... (an admin agent's API key)")
		}
		if len(o.dynConfig) > 0 || o.pprofAddr != "" {
			return nil, errors.New("--dynamic-config and --pprof-addr apply only to the stack the bench starts, not with --endpoint")
		}
		if slices.Contains(phases, phaseReads) && o.databaseURL != "" && !o.seedLive {
			return nil, errors.New("--phases reads with --endpoint and --database-url would seed a project of tasks without " +
				"workflows into that live database (chorus ops check then lists each as missing-workflow, and agents can " +
				"find them); leave out the reads phase, or pass --seed-live-database to a Chorus you can throw away")
		}
	}
	if o.seedLive && o.endpoint == "" {
		return nil, errors.New("--seed-live-database only applies with --endpoint")
	}
	return phases, nil
}

// benchTarget is the Chorus being measured.
type benchTarget struct {
	url             string
	metricsURL      string // the Chorus process's /metrics ("" when unknown)
	adminKey        string
	temporalAddress string
	namespace       string
	database        string // how the app database is described, for the report
	st              *store.Store
	company         *store.Company
	owner           *store.User // the company owner: the agents the bench creates act with its access
	adminUUID       string
	cleanup         []func()
}

func (t *benchTarget) close() {
	for i := len(t.cleanup) - 1; i >= 0; i-- {
		t.cleanup[i]()
	}
}

// benchLogger keeps the started stack quiet unless something goes wrong.
func benchLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startBenchStack runs the whole stack as chorus dev does, on free ports in a temporary directory.
func startBenchStack(ctx context.Context, o benchOptions, progress io.Writer) (*benchTarget, error) {
	t := &benchTarget{namespace: o.namespace}
	ok := false
	defer func() {
		if !ok {
			t.close()
		}
	}()
	dir, err := os.MkdirTemp("", "chorus-bench-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintf(progress, "bench: keeping %s\n", dir)
	} else {
		t.cleanup = append(t.cleanup, func() { _ = os.RemoveAll(dir) })
	}
	dsn := o.databaseURL
	if dsn == "" {
		dsn = filepath.Join(dir, "chorus.db")
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	t.st, t.database = st, describeDatabase(dsn)
	if _, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Default Company", OwnerName: "Owner",
		OwnerEmail: "owner@localhost", AgentName: "Admin Agent"}); err != nil {
		return nil, fmt.Errorf("first-start setup: %w", err)
	}
	if err := t.loadCompany(ctx); err != nil {
		return nil, err
	}
	admin, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: t.company.UUID, Name: "bench admin",
		Roles: []string{perm.AdminAgent}, OwnerUUID: &t.owner.UUID})
	if err != nil {
		return nil, err
	}
	t.adminKey, t.adminUUID = key, admin.UUID

	bin, err := devserver.FindServer(ctx, progress)
	if err != nil {
		return nil, err
	}
	tport, err := devserver.FreePort()
	if err != nil {
		return nil, err
	}
	devserver.DynamicConfig = append(devserver.DynamicConfig, o.dynConfig...)
	dev, err := devserver.Start(devserver.Options{Bin: bin, Port: tport, DBFile: filepath.Join(dir, "temporal.db"),
		LogPath: filepath.Join(dir, "temporal.log"), Namespace: o.namespace})
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = dev.Stop(20 * time.Second) })
	if err := dev.WaitReady(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	t.temporalAddress = dev.Address()

	hport, err := devserver.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(hport))
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		cfg := serverConfig{role: roleAll, addr: addr, temporal: temporalConfig{address: dev.Address(), namespace: o.namespace},
			temporalWait: 30 * time.Second, pprofAddr: o.pprofAddr}
		if o.soaking {
			cfg.retention = store.Retention{Requests: o.soakWindow, Journal: o.soakWindow, ClaimAttempts: o.soakWindow}
			cfg.pruneInterval, cfg.soak = o.pruneInterval, true
		}
		done <- runServer(srvCtx, benchLogger(), st, cfg, func() { close(ready) })
	}()
	t.cleanup = append(t.cleanup, func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		done <- err
		return nil, fmt.Errorf("the Chorus server stopped at start: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.url = "http://" + addr + mcp.Path
	t.metricsURL = "http://" + addr + "/metrics"
	fmt.Fprintf(progress, "bench: Chorus on %s (%s), Temporal dev server on %s\n", t.url, t.database, t.temporalAddress)
	fmt.Fprintf(progress, "bench: dev server dynamic config %s\n", strings.Join(devserver.DynamicConfig, " "))
	ok = true
	return t, nil
}

// connectBenchTarget prepares to measure a running Chorus.
func connectBenchTarget(ctx context.Context, o benchOptions) (*benchTarget, error) {
	t := &benchTarget{url: o.endpoint, adminKey: o.key, temporalAddress: o.temporal, namespace: o.namespace, database: "(not opened)"}
	if u, err := url.Parse(o.endpoint); err == nil {
		t.metricsURL = u.Scheme + "://" + u.Host + "/metrics" // the API process's: its worker, with role all
	}
	if o.databaseURL == "" {
		return t, nil
	}
	st, err := store.Open(ctx, o.databaseURL)
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = st.Close() })
	t.st, t.database = st, describeDatabase(o.databaseURL)
	if err := st.CheckMigrated(ctx); err != nil {
		t.close()
		return nil, err
	}
	if err := t.loadCompany(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *benchTarget) loadCompany(ctx context.Context) error {
	company, err := t.st.DefaultCompany(ctx)
	if err != nil {
		return fmt.Errorf("find the company: %w", err)
	}
	owner, err := t.st.CompanyOwner(ctx, company.UUID)
	if err != nil {
		return fmt.Errorf("find the company's owner: %w", err)
	}
	t.company, t.owner = company, owner
	return nil
}

// newDevelopers creates n developer agents, each with its own key, through the store.
func (t *benchTarget) newDevelopers(ctx context.Context, prefix string, n int) ([]string, error) {
	if t.st == nil {
		return nil, errors.New("needs the app database to create agents (pass --database-url)")
	}
	keys := make([]string, n)
	for i := range keys {
		_, key, err := t.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: t.company.UUID, Name: fmt.Sprintf("%s %d", prefix, i+1),
			Roles: []string{perm.DeveloperAgent}, OwnerUUID: &t.owner.UUID})
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// agent is one simulated agent: its own key and MCP session.
type agent struct {
	s *mcpsdk.ClientSession
}

// toolError is a tool's isError answer.
type toolError struct {
	tool, text string
}

func (e *toolError) Error() string { return e.tool + ": " + e.text }

// benchTransport is shared by every agent, with enough idle connections for all of them.
var benchTransport = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	return tr
}()

func connectAgent(ctx context.Context, url, key string) (*agent, error) {
	// Bench agents reach every tool their key permits, whatever their preset's default toolsets.
	httpc := &http.Client{Timeout: 2 * time.Minute, Transport: &authTransport{key: key, base: benchTransport,
		header: http.Header{mcp.ToolsetsHeader: {"all"}}}}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "chorus-bench", Version: version}, nil)
	s, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: httpc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	return &agent{s: s}, nil
}

func connectAgents(ctx context.Context, url string, keys []string) ([]*agent, error) {
	out := make([]*agent, len(keys))
	for i, k := range keys {
		a, err := connectAgent(ctx, url, k)
		if err != nil {
			closeAgents(out)
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func closeAgents(as []*agent) {
	for _, a := range as {
		if a != nil {
			_ = a.s.Close()
		}
	}
}

// call calls a tool and decodes its structured result into out (when not nil). A tool's
// isError answer is a *toolError.
func (a *agent) call(ctx context.Context, tool string, args map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := a.s.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return &toolError{tool: tool, text: resultText(res)}
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// machine describes where the bench ran.
type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel,omitempty"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute figures when the run started and ended:
	// other work on the machine shows in the figures.
	LoadAvgStart string `json:"loadAvgStart,omitempty"`
	LoadAvgEnd   string `json:"loadAvgEnd,omitempty"`
}

// loadAvg is the first three fields of /proc/loadavg, "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func thisMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, LoadAvgStart: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// benchReport is the JSON file.
type benchReport struct {
	Started  time.Time          `json:"started"`
	Seconds  float64            `json:"seconds"`
	Machine  machine            `json:"machine"`
	Target   map[string]any     `json:"target"`
	Settings benchSettings      `json:"settings"`
	Floors   map[string]summary `json:"floors"`
	Phases   []*phaseResult     `json:"phases"`
	Surface  *benchSurface      `json:"surface"`
	// Soak is the soak phase's samples of the bounded tables' sizes.
	Soak []soakSample `json:"soak,omitempty"`
}

type benchSettings struct {
	Phases        []string `json:"phases"`
	Agents        int      `json:"agents"`
	TasksPerAgent int      `json:"tasksPerAgent"`
	Rounds        int      `json:"rounds"`
	Racers        int      `json:"racers"`
	RaceRounds    int      `json:"raceRounds"`
	ReadTasks     []int    `json:"readTasks"`
	ReadCalls     int      `json:"readCalls"`
	BulkBatches   int      `json:"bulkBatches"`
	BulkSize      int      `json:"bulkSize"`
	FloorOps      int      `json:"floorOps"`
	FloorPer      int      `json:"floorPerClient"`
	DynamicConfig []string `json:"dynamicConfig,omitempty"`
}

func runBench(ctx context.Context, o benchOptions, phases []string, out io.Writer) error {
	started := time.Now()
	var (
		t   *benchTarget
		err error
	)
	o.soaking = slices.Contains(phases, phaseSoak)
	if o.endpoint == "" {
		t, err = startBenchStack(ctx, o, out)
	} else {
		t, err = connectBenchTarget(ctx, o)
	}
	if err != nil {
		return err
	}
	defer t.close()

	reads := []int{o.readTasks}
	if o.readLarge > 0 {
		reads = append(reads, o.readLarge)
	}
	rep := &benchReport{Started: started.UTC(), Machine: thisMachine(), Floors: map[string]summary{},
		Target: map[string]any{"endpoint": t.url, "temporal": t.temporalAddress, "namespace": t.namespace, "database": t.database,
			"startedByBench": o.endpoint == ""},
		Settings: benchSettings{Phases: phases, Agents: o.agents, TasksPerAgent: o.tasksPer, Rounds: o.rounds, Racers: o.racers,
			RaceRounds: o.raceRounds, ReadTasks: reads, ReadCalls: o.readCalls, BulkBatches: o.bulkBatches, BulkSize: o.bulkSize,
			FloorOps: o.floorOps, FloorPer: o.floorPer, DynamicConfig: devserver.DynamicConfig}}
	m := rep.Machine
	fmt.Fprintf(out, "bench: %d CPU(s) %s, %s %s/%s, load average %s\n", m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.Arch, m.LoadAvgStart)
	if rep.Surface, err = printSurface(out); err != nil {
		return err
	}

	b := &bencher{o: o, t: t, floors: rep.Floors}
	defer b.close()
	admin, err := connectAgent(ctx, t.url, t.adminKey)
	if err != nil {
		return err
	}
	defer closeAgents([]*agent{admin})
	b.admin = admin
	var project mcp.CreatedProject
	if err := admin.call(ctx, "chorus_admin_create_project", map[string]any{"name": "bench " + started.UTC().Format(time.RFC3339)}, &project); err != nil {
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
		var res *phaseResult
		switch p {
		case phaseFloors:
			res = b.floorsPhase(ctx)
		case phaseSingle:
			res = b.singlePhase(ctx)
		case phaseAgents:
			res = b.agentsPhase(ctx)
		case phaseRace:
			res = b.racePhase(ctx)
		case phaseReads:
			res = b.readsPhase(ctx, reads)
		case phaseBulk:
			res = b.bulkPhase(ctx)
		case phaseSoak:
			res = b.soakPhase(ctx)
		case phaseOpsCheck:
			res = b.opsCheckPhase(ctx)
		}
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
	if o.jsonPath != "" {
		bs, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonPath, append(bs, '\n'), 0o644); err != nil {
			return fmt.Errorf("--json %s: %w", o.jsonPath, err)
		}
		fmt.Fprintf(out, "\nbench: figures written to %s (%.0f s in all)\n", o.jsonPath, rep.Seconds)
	}
	return nil
}

// reportWorkflowTaskFailures counts the workflow tasks that failed or timed out in each
// phase's time (from its start to the next phase's start) and adds the count to the phase.
func (b *bencher) reportWorkflowTaskFailures(ctx context.Context, started time.Time, windows []phaseWindow, out io.Writer) {
	tc, err := b.temporal(ctx)
	if err == nil {
		var counts []wfTaskFailures
		if counts, err = countWorkflowTaskFailures(ctx, tc, b.t.namespace, started, windows); err == nil {
			fmt.Fprintf(out, "\n### Workflow-task failures\n\n| phase | failed | timed out | failed, as the worker counted |\n|---|---:|---:|---:|\n")
			var firsts []string
			for i, w := range windows {
				c := counts[i]
				w.res.WorkflowTaskFailures = &c
				w.res.Notes = append(w.res.Notes, c.note())
				worker := "not read"
				if c.WorkerFailed >= 0 {
					worker = fmt.Sprint(c.WorkerFailed)
				}
				fmt.Fprintf(out, "| %s | %d | %d | %s |\n", w.res.Name, c.Failed, c.TimedOut, worker)
				if c.First != "" {
					firsts = append(firsts, fmt.Sprintf("First in %q: %s", w.res.Name, c.First))
				}
			}
			fmt.Fprintf(out, "\nFrom the histories of the %d workflow runs started since the bench began: a failed task is one "+
				"the worker answered it could not process; a timed-out one waited longer than its timeout (ScheduleToStart: "+
				"no worker took it from the sticky queue within 5 s; StartToClose: the worker took it but did not answer "+
				"within 10 s). The last column is the Chorus worker's own count (temporal_workflow_task_execution_failed): "+
				"it also sees the failures of a task retried after failing (a transient workflow task), which the history records only once.\n", runsRead(counts))
			for _, f := range firsts {
				fmt.Fprintf(out, "\n%s\n", f)
			}
			return
		}
	}
	fmt.Fprintf(out, "\nbench: workflow-task failures not counted: %v\n", err)
}

func runsRead(counts []wfTaskFailures) int {
	if len(counts) == 0 {
		return 0
	}
	return counts[0].Runs
}

// bencher holds what the phases share.
type bencher struct {
	o       benchOptions
	t       *benchTarget
	admin   *agent
	project string
	floors  map[string]summary
	devs    []*agent // developer agents, created on first need
	tc      client.Client
	soak    []soakSample // the soak phase's samples, for the JSON file
}

// developers returns n developer agents (created and connected once, then reused).
func (b *bencher) developers(ctx context.Context, n int) ([]*agent, error) {
	if len(b.devs) >= n {
		return b.devs[:n], nil
	}
	keys, err := b.t.newDevelopers(ctx, "bench developer", n-len(b.devs))
	if err != nil {
		return nil, err
	}
	more, err := connectAgents(ctx, b.t.url, keys)
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
	tc, err := dialTemporal(ctx, benchLogger(), temporalConfig{address: b.t.temporalAddress, namespace: b.t.namespace}, 30*time.Second)
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
			d, err := tc.DescribeWorkflowExecution(ctx, workflows.TaskID(id), "")
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
