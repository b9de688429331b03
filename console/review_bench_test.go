package console_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// BenchmarkProposalReviewRender measures the proposal review pages as a signed-in person gets
// them over HTTP (session check, use cases, Markdown rendering and sanitizing, the template), in a
// project of 10,000 tasks (issue 22, item 5: at most 50 ms p50). It reports the median and the
// 95th percentile of the requests in ms-p50 and ms-p95:
//
//	go test ./console -run '^$' -bench BenchmarkProposalReviewRender -benchtime 200x
//
// The 10,000 tasks are seeded straight into the tables (store.SeedReadTasks: rows without
// workflows, fine for pages that only read); the proposal is built by agents through MCP.
func BenchmarkProposalReviewRender(b *testing.B) {
	s := newStack(b, "sqlite")
	f := s.pendingProposal("private")
	ctx := context.Background()
	var agent store.Agent
	require.NoError(b, s.st.DB.NewSelect().Model(&agent).Where("company_uuid = ?", s.company).Limit(1).Scan(ctx))
	_, err := s.st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: s.company, ProjectUUID: f.project,
		CreatedByUUID: agent.UUID, Count: 10_000})
	require.NoError(b, err)
	_, err = s.st.DB.ExecContext(ctx, "ANALYZE")
	require.NoError(b, err)
	c, _ := s.httpSignIn(s.admin)

	b.Run("queue", func(b *testing.B) { benchPage(b, c, s.url+"/console/review", "Checkout v2") })
	b.Run("pending", func(b *testing.B) { benchPage(b, c, s.url+"/console/proposals/"+f.proposal, "Checkout PRD") })
	s.call(s.connect(s.adminKey), "chorus_admin_approve_proposal", map[string]any{"proposalUuid": f.proposal})
	b.Run("approved", func(b *testing.B) { benchPage(b, c, s.url+"/console/proposals/"+f.proposal, `id="approved-tasks"`) })
}

// benchPage gets url b.N times, checks each answer is the page (200, containing want), and
// reports the median and 95th percentile latency.
func benchPage(b *testing.B, c *http.Client, url, want string) {
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := c.Get(url)
		require.NoError(b, err)
		body := readAll(b, res)
		times = append(times, time.Since(start))
		if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			b.Fatalf("GET %s: %d, without %q", url, res.StatusCode, want)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	ms := func(q float64) float64 { return float64(times[int(q*float64(len(times)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "ms-p50")
	b.ReportMetric(ms(0.95), "ms-p95")
}
