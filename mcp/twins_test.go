package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
)

// holdAfterLedger is a query hook for one API process: once armed, it holds the first query
// that follows the process's next requestId ledger insert (the handler's first query, before
// it takes any lock) until released.
type holdAfterLedger struct {
	mu      sync.Mutex
	armed   bool
	claimed bool // the ledger insert was seen
	release chan struct{}
	held    chan struct{} // closed when a query is held
}

func (h *holdAfterLedger) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed, h.claimed = true, false
	h.release, h.held = make(chan struct{}), make(chan struct{})
}

func (h *holdAfterLedger) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	h.mu.Lock()
	if !h.armed {
		h.mu.Unlock()
		return ctx
	}
	if strings.Contains(ev.Query, `"tool_requests"`) {
		h.claimed = h.claimed || strings.HasPrefix(ev.Query, "INSERT")
		h.mu.Unlock()
		return ctx
	}
	if !h.claimed {
		h.mu.Unlock()
		return ctx
	}
	h.armed = false
	release := h.release
	close(h.held)
	h.mu.Unlock()
	<-release
	return ctx
}

func (h *holdAfterLedger) AfterQuery(context.Context, *bun.QueryEvent) {}

// ledgerReads counts one API process's reads of the requestId ledger.
type ledgerReads struct{ n atomic.Int64 }

func (l *ledgerReads) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if strings.HasPrefix(ev.Query, "SELECT") && strings.Contains(ev.Query, `FROM "tool_requests"`) {
		l.n.Add(1)
	}
	return ctx
}

func (l *ledgerReads) AfterQuery(context.Context, *bun.QueryEvent) {}

// Twin calls (the same agent, requestId, tool and arguments, sent while the first call still
// runs, here through another API process) all get the first call's result, for the tools that
// are plain transactions as for the others, and nothing is done twice (docs/write-path.md,
// "Exactly once"). Each first call is held inside its handler until its twins either finished
// on their own (what they did before they waited) or are seen waiting on the ledger.
func TestConcurrentTwinsGetTheFirstResult(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, admin, project, "Idea")
		proposal, _ := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var doc DocumentView
		ok(t, admin, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "guide",
			"title": "Guide", "content": "text"}, &doc)

		hold, reads := &holdAfterLedger{}, &ledgerReads{}
		first := e.process(hold).client(e.adminKey)
		other := e.process(reads).client(e.adminKey)
		const twins = 5
		twinCalls := func(name string, args map[string]any) []*mcpsdk.CallToolResult {
			t.Helper()
			hold.arm()
			results := make([]*mcpsdk.CallToolResult, twins+1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[0] = call(t, first, name, args)
			}()
			select {
			case <-hold.held:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the first call never reached its handler", name)
			}
			before := reads.n.Load()
			var done atomic.Int64
			for i := 1; i <= twins; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = call(t, other, name, args)
					done.Add(1)
				}()
			}
			requireEventually2(t, 30*time.Second, func() bool {
				return done.Load() == twins || reads.n.Load()-before >= 3*twins
			}, "the twins neither finished nor waited")
			close(hold.release)
			wg.Wait()
			require.False(t, results[0].IsError, "%s: the first call failed: %s", name, text(results[0]))
			for i, r := range results[1:] {
				require.Equal(t, text(results[0]), text(r), "%s: twin %d got another answer", name, i+1)
				require.Equal(t, results[0].IsError, r.IsError)
			}
			return results
		}
		count := func(model any, where string, args ...any) int64 {
			n, err := e.st.DB.NewSelect().Model(model).Where(where, args...).Count(ctx)
			require.NoError(t, err)
			return n
		}

		twinCalls("chorus_admin_create_project", map[string]any{"name": "Twins", "requestId": "p1"})
		require.EqualValues(t, 1, count((*store.Project)(nil), "name = ?", "Twins"))

		twinCalls("chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "spec",
			"title": "Twin spec", "requestId": "d1"})
		require.EqualValues(t, 1, count((*store.Document)(nil), "title = ?", "Twin spec"))

		report := map[string]any{"proposalUuid": proposal, "title": "Report", "content": "done", "requestId": "r1"}
		twinCalls("chorus_create_report", report)
		require.EqualValues(t, 1, count((*store.Document)(nil), "type = 'report' AND proposal_uuid = ?", proposal))
		report["requestId"], report["force"] = "r2", true
		twinCalls("chorus_create_report", report)
		require.EqualValues(t, 2, count((*store.Document)(nil), "type = 'report' AND proposal_uuid = ?", proposal))

		results := twinCalls("chorus_admin_delete_document", map[string]any{"documentUuid": doc.UUID, "requestId": "x1"})
		require.Equal(t, fmt.Sprintf("Document %s deleted", doc.UUID), text(results[0]))
		deleted := results[0]

		results = twinCalls("chorus_add_reference", map[string]any{"targetType": "idea", "targetUuid": idea, "type": "docs",
			"url": "https://twins.dev", "title": "Twin ref", "requestId": "ref1"})
		require.EqualValues(t, 1, count((*store.Reference)(nil), "title = ?", "Twin ref"))
		require.EqualValues(t, 1, count((*store.Activity)(nil), "target_uuid = ? AND action = 'reference_added'", idea))
		ref := decode[ReferenceView](t, results[0])
		results = twinCalls("chorus_remove_reference", map[string]any{"uuid": ref.UUID, "requestId": "ref1-removed"})
		require.Contains(t, text(results[0]), `"action":"reference_removed"`)
		require.EqualValues(t, 0, count((*store.Reference)(nil), "title = ?", "Twin ref"))

		// Later retries, from either process, return the stored results.
		res := call(t, first, "chorus_admin_delete_document", map[string]any{"documentUuid": doc.UUID, "requestId": "x1"})
		require.Equal(t, text(deleted), text(res))
		res = call(t, other, "chorus_remove_reference", map[string]any{"uuid": ref.UUID, "requestId": "ref1-removed"})
		require.Equal(t, text(results[0]), text(res))
		e.requireAgreement()
	})
}
