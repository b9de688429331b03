package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
)

// benchTasksEnv sets how many tasks BenchmarkReads seeds into its project (default 10,000), e.g.
// CHORUS_BENCH_TASKS=100000. Results are in docs/bench-results.md ("Reads").
const benchTasksEnv = "CHORUS_BENCH_TASKS"

// benchExplainEnv, when set, makes BenchmarkReads print the plan of every query each case runs
// (EXPLAIN QUERY PLAN on SQLite, EXPLAIN ANALYZE on PostgreSQL).
const benchExplainEnv = "CHORUS_BENCH_EXPLAIN"

// readBench is a store seeded with one big project, and the read tools called the way an MCP
// request calls them: the key resolved to a Principal (resolvePrincipal, as authenticate does),
// then the tool's handler with raw JSON arguments (normalization, the project gate, the store
// reads, the JSON encoding of the result). Only the HTTP and JSON-RPC framing is left out.
type readBench struct {
	deps    *Deps
	tools   map[string]*builtTool
	key     string
	project string
	tasks   []string // every task of the project, oldest first
}

// seedReadBench seeds a project of n tasks straight through bun: three acceptance criteria
// each, a dependency-heavy graph (most tasks depend on one to four earlier tasks, so the graph
// is acyclic), every status and priority, a few comments, and a second project of 200 tasks so
// the project filters are exercised; then it counts each task's unresolved dependencies.
func seedReadBench(b *testing.B, dialect string, n int) *readBench {
	b.Helper()
	ctx := context.Background()
	st := storetest.Open(b, dialect)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
	if err != nil {
		b.Fatal(err)
	}
	caller := store.Caller{CompanyUUID: boot.Company.UUID, AgentUUID: boot.Agent.UUID, AgentName: boot.Agent.Name,
		OwnerUUID: boot.Owner.UUID}
	rb := &readBench{key: boot.Key, tools: map[string]*builtTool{}}
	for i, size := range []int{n, 200} {
		p, err := st.CreateProject(ctx, caller, store.NewProject{Name: "Bench " + strconv.Itoa(i)})
		if err != nil {
			b.Fatal(err)
		}
		tasks := seedTasks(b, st.DB, caller, p.UUID, size)
		// The rows went straight into the tables: count their unresolved dependencies as the
		// writers would have (store/unresolved.go).
		if _, err := st.RecountUnresolved(ctx, p.UUID); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			rb.project, rb.tasks = p.UUID, tasks
		}
	}
	// Planner statistics and (PostgreSQL) the visibility map, as autovacuum leaves a live
	// database after a bulk insert: index-only scans depend on it.
	analyze := "ANALYZE"
	if dialect == "pg" {
		analyze = "VACUUM ANALYZE"
	}
	if _, err := st.DB.ExecContext(ctx, analyze); err != nil {
		b.Fatal(err)
	}
	rb.deps = &Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ep, err := NewEndpoint(rb.deps, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range ep.tools {
		rb.tools[t.spec.Name] = t
	}
	return rb
}

var (
	benchStatuses   = []vocab.TaskStatus{"done", "done", "done", "done", "closed", "open", "open", "assigned", "in_progress", "to_verify"}
	benchPriorities = []string{"high", "medium", "medium", "low"}
)

// seedTasks inserts size tasks into project in batches and returns their uuids, oldest first.
func seedTasks(b *testing.B, db *bun.DB, c store.Caller, project string, size int) []string {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	uuids := make([]string, size)
	for i := range uuids {
		uuids[i] = store.NewUUID()
	}
	proposals := []string{store.NewUUID(), store.NewUUID(), store.NewUUID()}
	const batch = 500
	for lo := 0; lo < size; lo += batch {
		hi := min(lo+batch, size)
		var (
			tasks    []store.Task
			criteria []store.AcceptanceCriterion
			deps     []store.TaskDependency
			comments []store.Comment
		)
		for i := lo; i < hi; i++ {
			at := start.Add(time.Duration(i) * time.Second)
			t := store.Task{UUID: uuids[i], CompanyUUID: c.CompanyUUID, ProjectUUID: project,
				Title: fmt.Sprintf("Task %d: implement part %d of the feature", i, i%97), Status: benchStatuses[rng.IntN(len(benchStatuses))],
				Priority: benchPriorities[rng.IntN(len(benchPriorities))], CreatedByType: "agent", CreatedByUUID: c.AgentUUID,
				Version: 1, CreatedAt: at, UpdatedAt: at}
			desc := "A description long enough to look like one an agent writes for a task of this size."
			t.Description = &desc
			if i%3 == 0 {
				t.ProposalUUID = &proposals[i%len(proposals)]
			}
			if t.Status != "open" && t.Status != "done" && t.Status != "closed" {
				typ := "agent"
				t.AssigneeType, t.AssigneeUUID, t.AssignedAt = &typ, &c.AgentUUID, &at
			}
			tasks = append(tasks, t)
			for k := range 3 {
				criteria = append(criteria, store.AcceptanceCriterion{UUID: store.NewUUID(), TaskUUID: t.UUID,
					Description: fmt.Sprintf("Criterion %d of task %d holds", k, i), Required: k < 2, DevStatus: "pending",
					Status: "pending", SortOrder: k, CreatedAt: at, UpdatedAt: at})
			}
			// 0 to 4 dependencies on earlier tasks, mostly recent ones.
			seen := map[int]bool{}
			for range rng.IntN(5) {
				if i == 0 {
					break
				}
				d := i - 1 - rng.IntN(min(i, 50))
				if !seen[d] {
					seen[d] = true
					deps = append(deps, store.TaskDependency{TaskUUID: t.UUID, DependsOnUUID: uuids[d], CreatedAt: at})
				}
			}
			if i%10 == 0 {
				comments = append(comments, store.Comment{UUID: store.NewUUID(), CompanyUUID: c.CompanyUUID, TargetType: "task",
					TargetUUID: t.UUID, Content: "A comment.", AuthorType: "agent", AuthorUUID: c.AgentUUID, CreatedAt: at, UpdatedAt: at})
			}
		}
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.NewInsert().Model(&tasks).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewInsert().Model(&criteria).Exec(ctx); err != nil {
				return err
			}
			if len(deps) > 0 {
				if _, err := tx.NewInsert().Model(&deps).Exec(ctx); err != nil {
					return err
				}
			}
			if len(comments) > 0 {
				if _, err := tx.NewInsert().Model(&comments).Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seed tasks %d..%d: %v", lo, hi, err)
		}
	}
	return uuids
}

// call runs one tool call as an MCP request would and fails the benchmark on an isError result.
func (rb *readBench) call(b *testing.B, name string, args map[string]any) *mcpsdk.CallToolResult {
	ctx := context.Background()
	p, err := resolvePrincipal(ctx, rb.deps, rb.key)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	res, err := rb.tools[name].handler(withPrincipal(ctx, p),
		&mcpsdk.CallToolRequest{Params: &mcpsdk.CallToolParamsRaw{Name: name, Arguments: raw}})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s %v: %s", name, args, text(res))
	}
	return res
}

// measure runs call b.N times and reports p50 and p99 in milliseconds beside ns/op.
func measure(b *testing.B, call func(i int)) {
	b.Helper()
	call(0) // warm the connection pool and statement caches
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		call(i)
		durations = append(durations, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(durations)
	at := func(q float64) float64 {
		return float64(durations[min(len(durations)-1, int(q*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkReads measures chorus_get_task, chorus_list_tasks (first, deep and last pages, and a
// filtered list) and chorus_get_unblocked_tasks (first and last pages) on a project of
// CHORUS_BENCH_TASKS tasks, on SQLite and PostgreSQL. Run it with
//
//	go test ./mcp -run '^$' -bench BenchmarkReads -benchtime 400x
func BenchmarkReads(b *testing.B) {
	n := 10000
	if v := os.Getenv(benchTasksEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("%s=%q: want a number of tasks >= 100", benchTasksEnv, v)
		}
	}
	for _, dialect := range storetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			t0 := time.Now()
			rb := seedReadBench(b, dialect, n)
			b.Logf("%s: seeded %d tasks in %s", dialect, n, time.Since(t0).Round(time.Millisecond))
			last := func(name string, args map[string]any) int {
				var out TaskList
				b, _ := json.Marshal(rb.call(b, name, args).StructuredContent)
				_ = json.Unmarshal(b, &out)
				return max(1, (out.Total+19)/20)
			}
			listLast := last("chorus_list_tasks", map[string]any{"projectUuid": rb.project})
			unblockedLast := last("chorus_get_unblocked_tasks", map[string]any{"projectUuid": rb.project})
			pick := rand.New(rand.NewPCG(1, 2))
			cases := []struct {
				name string
				tool string
				args func(i int) map[string]any
			}{
				{"get_task", "chorus_get_task", func(int) map[string]any {
					return map[string]any{"taskUuid": rb.tasks[pick.IntN(len(rb.tasks))]}
				}},
				{"list_first", "chorus_list_tasks", func(int) map[string]any { return map[string]any{"projectUuid": rb.project} }},
				{"list_page250", "chorus_list_tasks", func(int) map[string]any {
					return map[string]any{"projectUuid": rb.project, "page": min(250, listLast)}
				}},
				{"list_last", "chorus_list_tasks", func(int) map[string]any {
					return map[string]any{"projectUuid": rb.project, "page": listLast}
				}},
				{"list_status_deep", "chorus_list_tasks", func(int) map[string]any {
					return map[string]any{"projectUuid": rb.project, "status": "open", "page": max(1, listLast/10)}
				}},
				{"unblocked_first", "chorus_get_unblocked_tasks", func(int) map[string]any { return map[string]any{"projectUuid": rb.project} }},
				{"unblocked_last", "chorus_get_unblocked_tasks", func(int) map[string]any {
					return map[string]any{"projectUuid": rb.project, "page": unblockedLast}
				}},
			}
			for _, c := range cases {
				if os.Getenv(benchExplainEnv) != "" {
					rb.explain(b, dialect, c.name, func() { rb.call(b, c.tool, c.args(0)) })
				}
				b.Run(c.name, func(b *testing.B) {
					measure(b, func(i int) { rb.call(b, c.tool, c.args(i)) })
				})
			}
		})
	}
}

// queryLog records the SQL of every query while on.
type queryLog struct {
	on      bool
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if l.on {
		l.queries = append(l.queries, e.Query)
	}
}

// explain runs call once and prints the plan of each query it ran.
func (rb *readBench) explain(b *testing.B, dialect, name string, call func()) {
	b.Helper()
	ctx := context.Background()
	log := &queryLog{on: true}
	rb.deps.Store.DB.AddQueryHook(log)
	call()
	log.on = false
	prefix := "EXPLAIN QUERY PLAN "
	if dialect == "pg" {
		prefix = "EXPLAIN (ANALYZE, BUFFERS) "
	}
	fmt.Printf("==== %s/%s: %d queries\n", dialect, name, len(log.queries))
	for _, q := range log.queries {
		rows, err := rb.deps.Store.DB.QueryContext(ctx, prefix+q)
		if err != nil {
			fmt.Printf("-- %s\n   (no plan: %v)\n", q, err)
			continue
		}
		cols, _ := rows.Columns()
		fmt.Printf("-- %s\n", q)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			_ = rows.Scan(ptrs...)
			fmt.Printf("   %v\n", vals[len(vals)-1])
		}
		_ = rows.Close()
	}
}
