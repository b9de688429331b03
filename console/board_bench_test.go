package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
)

// benchBoardTasksEnv sets how many tasks BenchmarkBoardRender seeds into its project (default
// 10,000, the size issue 22 names). Results: docs/performance.md, "Console pages".
const benchBoardTasksEnv = "CHORUS_BENCH_TASKS"

// BenchmarkBoardRender measures the server's render of a project's board at 10,000 tasks: one
// GET through the console's handler (session lookup, the app's reads, the template) per
// iteration, with no network between. It reports the p50 and p99 in ms, and the process's CPU
// time per request (cpu-ms/op, which a busy machine does not inflate). Cases: the whole board;
// the board filtered by an idea whose proposal holds half the tasks; a deep page of the open
// column; the idea's dependency graph (its first app.GraphTaskLimit tasks); the idea tracker
// (ideas.go) and the review page of the approved proposal that holds 5,000 of the tasks
// (review.go), the other two pages issue 22 bounds. On sqlite always, on
// PostgreSQL when CHORUS_TEST_PG_DSN is set.
func BenchmarkBoardRender(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv(benchBoardTasksEnv)); err == nil && v > 0 {
		n = v
	}
	dialects := []string{"sqlite"}
	if os.Getenv("CHORUS_TEST_PG_DSN") != "" {
		dialects = append(dialects, "pg")
	}
	for _, dialect := range dialects {
		b.Run(dialect, func(b *testing.B) {
			w := seedBoardBench(b, dialect, n)
			for _, c := range []struct{ name, path string }{
				{"board", "/console/projects/" + w.project},
				{"board-idea", "/console/projects/" + w.project + "?idea=" + w.idea},
				{"board-deep-page", "/console/projects/" + w.project + "?status=open&page=40"},
				{"idea-graph", "/console/ideas/" + w.idea + "/graph"},
				{"idea-tracker", "/console/projects/" + w.project + "/ideas"},
				{"proposal-review", "/console/proposals/" + w.proposal},
			} {
				b.Run(c.name, func(b *testing.B) { w.measure(b, c.path) })
			}
		})
	}
}

// boardBench is a console over a store seeded with one big project, and a signed-in session.
type boardBench struct {
	handler  http.Handler
	st       *store.Store
	cookie   *http.Cookie
	project  string
	idea     string
	proposal string
}

// measure GETs path b.N times and reports the latencies' p50 and p99.
func (w *boardBench) measure(b *testing.B, path string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.AddCookie(w.cookie)
	rec := httptest.NewRecorder()
	w.handler.ServeHTTP(rec, req) // warm: templates, statement caches
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body.String())
	}
	times := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(w.cookie)
		start := time.Now()
		w.handler.ServeHTTP(rec, req)
		times = append(times, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, rec.Code)
		}
	}
	b.StopTimer()
	// The process's CPU time per request: the work of the render on sqlite (in process) whatever
	// else the machine runs; on PostgreSQL the server's share is not in it.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(times)), "cpu-ms/op")
	slices.Sort(times)
	ms := func(q float64) float64 {
		return float64(times[min(len(times)-1, int(q*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// seedBoardBench seeds a project of n tasks (store.SeedReadTasks: chains of dependencies, open,
// done and closed, one criterion each), puts one in twenty in progress and one in forty to
// verify with the admin agent as assignee, and gives half the tasks to a proposal built on an
// idea (seedIdeaTasks); then signs the company's admin in.
func seedBoardBench(b *testing.B, dialect string, n int) *boardBench {
	b.Helper()
	ctx := context.Background()
	st := storetest.Open(b, dialect)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada Admin",
		OwnerEmail: "ada@example.com", AgentName: "Admin Agent"})
	benchMust(b, err)
	caller := store.Caller{CompanyUUID: boot.Company.UUID, AgentUUID: boot.Agent.UUID, AgentName: boot.Agent.Name,
		OwnerUUID: boot.Owner.UUID}
	p, err := st.CreateProject(ctx, caller, store.NewProject{Name: "Bench"})
	benchMust(b, err)
	ids, err := st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID,
		CreatedByUUID: boot.Agent.UUID, Count: n})
	benchMust(b, err)
	var inProgress, toVerify, ofIdea []string
	for i, id := range ids {
		switch {
		case i%20 == 1:
			inProgress = append(inProgress, id)
		case i%40 == 2:
			toVerify = append(toVerify, id)
		}
		if i%2 == 0 {
			ofIdea = append(ofIdea, id)
		}
	}
	idea, proposal := seedIdeaTasks(b, st, boot.Company.UUID, p.UUID, boot.Agent.UUID, ofIdea)
	for status, rows := range map[string][]string{"in_progress": inProgress, "to_verify": toVerify} {
		_, err = st.DB.NewUpdate().Table("tasks").Set("status = ?", status).Set("assignee_type = 'agent'").
			Set("assignee_uuid = ?", boot.Agent.UUID).Where("uuid IN (?)", bun.List(rows)).Exec(ctx)
		benchMust(b, err)
	}
	_, err = st.RecountUnresolved(ctx, p.UUID)
	benchMust(b, err)
	analyze := "ANALYZE"
	if dialect == "pg" {
		analyze = "VACUUM ANALYZE"
	}
	_, err = st.DB.ExecContext(ctx, analyze)
	benchMust(b, err)

	con, err := console.New(console.Config{App: &app.App{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	benchMust(b, err)
	e := echo.New()
	con.Mount(e)
	srv := httptest.NewServer(e)
	b.Cleanup(srv.Close)
	s := &stack{t: b, st: st, url: srv.URL, company: boot.Company.UUID, admin: &boot.Owner}
	_, session := s.httpSignIn(s.admin)
	return &boardBench{handler: e, st: st, cookie: session, project: p.UUID, idea: idea, proposal: proposal}
}

// seedIdeaTasks writes an idea and an approved proposal built on it straight into the tables
// (no workflow: only for a project no command touches, see store.ReadSeed), makes tasks that
// proposal's tasks and returns the idea's and the proposal's uuids.
func seedIdeaTasks(t testing.TB, st *store.Store, company, project, agent string, tasks []string) (string, string) {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project, Title: "Big idea",
		Status: vocab.IdeaElaborated, CreatedByType: "agent", CreatedByUUID: agent, Version: 1,
		ChangeID: "bench-seed", CreatedAt: now, UpdatedAt: now}
	proposal := store.Proposal{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project,
		Title: "Big plan", InputType: "idea", InputUUIDs: []string{idea.UUID}, Status: vocab.ProposalApproved,
		CreatedByType: "agent", CreatedByUUID: agent, Version: 1, ChangeID: "bench-seed", CreatedAt: now, UpdatedAt: now}
	_, err := st.DB.NewInsert().Model(&idea).Exec(ctx)
	benchMust(t, err)
	_, err = st.DB.NewInsert().Model(&proposal).Exec(ctx)
	benchMust(t, err)
	for from := 0; from < len(tasks); from += 500 {
		_, err = st.DB.NewUpdate().Table("tasks").Set("proposal_uuid = ?", proposal.UUID).
			Where("uuid IN (?)", bun.List(tasks[from:min(from+500, len(tasks))])).Exec(ctx)
		benchMust(t, err)
	}
	return idea.UUID, proposal.UUID
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
