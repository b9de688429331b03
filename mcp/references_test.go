package mcp

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// otherOwnersAgent creates an agent owned by a new user of the company (who is a member of
// nothing) with the given presets and returns a client for it: it sees public projects only.
func (e *env) otherOwnersAgent(name string, presets ...string) *mcpsdk.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.st.EnsureUser(ctx, e.company, strings.ToLower(strings.ReplaceAll(name, " ", "."))+"@example.com", name+" Owner")
	require.NoError(e.t, err)
	_, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: name, Roles: presets, OwnerUUID: &u.UUID})
	require.NoError(e.t, err)
	return e.client(key)
}

func createPrivateProject(t *testing.T, s *mcpsdk.ClientSession, name string) string {
	t.Helper()
	var p CreatedProject
	ok(t, s, "chorus_admin_create_project", map[string]any{"name": name, "visibility": "private"}, &p)
	return p.UUID
}

func referenceCount(t *testing.T, st *store.Store, target string) int {
	t.Helper()
	n, err := st.DB.NewSelect().Model((*store.Reference)(nil)).Where("target_uuid = ?", target).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// The reference tools (docs/rules.md §4.12): add, read back on the target oldest first, update,
// remove; their refusals; the project access of the target.
func TestReferenceTools(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)

		var first, second ReferenceView
		ok(t, pm, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": task, "type": "repo",
			"url": "  https://github.com/acme/apollo  ", "title": " Apollo repo ", "notes": "main branch"}, &first)
		require.Equal(t, "task", first.TargetType)
		require.Equal(t, task, first.TargetUUID)
		require.Equal(t, "https://github.com/acme/apollo", first.URL, "the url is kept trimmed")
		require.Equal(t, "Apollo repo", first.Title)
		require.Equal(t, "main branch", *first.Notes)
		require.Equal(t, &store.ActorRef{Type: "agent", UUID: first.CreatedBy.UUID, Name: "PM"}, first.CreatedBy)
		ok(t, pm, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": task, "type": "issue_pr",
			"url": "HTTP://example.com/issues/7", "title": "Bug 7"}, &second)
		require.Nil(t, second.Notes)
		require.Equal(t, 2, activityCount(t, e.st, task, "reference_added"))

		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, []ReferenceView{first, second}, v.References, "oldest first")

		// Refusals name what is wrong; nothing is added.
		add := func(args map[string]any) string {
			base := map[string]any{"targetType": "task", "targetUuid": task, "type": "docs", "url": "https://x.dev", "title": "X"}
			for k, val := range args {
				base[k] = val
			}
			return fails(t, pm, "chorus_add_reference", base)
		}
		require.Equal(t, "Failed to add reference: Invalid reference type: blog. Use one of docs, repo, issue_pr, paper_blog.",
			add(map[string]any{"type": "blog"}))
		require.Equal(t, "Failed to add reference: Invalid reference url: ftp://x.dev. Give a full address starting with http:// or https://.",
			add(map[string]any{"url": "ftp://x.dev"}))
		require.Contains(t, add(map[string]any{"url": "https://"}), "Invalid reference url")
		require.Equal(t, "Input validation error: title must not be blank", add(map[string]any{"title": "  "}))
		missing := store.NewUUID()
		require.Equal(t, "Failed to add reference: Target idea with UUID "+missing+" not found",
			add(map[string]any{"targetType": "idea", "targetUuid": missing}))
		require.Contains(t, add(map[string]any{"targetType": "document"}), "Input validation error: targetType must be one of idea, proposal, task")
		require.Equal(t, 2, referenceCount(t, e.st, task))

		// The target's project access: hidden is not found, and the developer preset has no document:write.
		secret := createPrivateProject(t, admin, "Secret")
		hidden := createTask(t, admin, secret)
		stranger := e.otherOwnersAgent("Stranger", perm.PMAgent)
		require.Equal(t, "Failed to add reference: Target task with UUID "+hidden+" not found",
			fails(t, stranger, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": hidden, "type": "docs",
				"url": "https://x.dev", "title": "X"}))
		require.Equal(t, "Tool chorus_add_reference not found", fails(t, e.client(e.agent("Dev", perm.DeveloperAgent)),
			"chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": task, "type": "docs", "url": "https://x.dev", "title": "X"}))
		var onHidden ReferenceView
		ok(t, admin, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": hidden, "type": "docs",
			"url": "https://x.dev", "title": "X"}, &onHidden)
		require.Equal(t, "Failed to update reference: Reference with UUID "+onHidden.UUID+" not found",
			fails(t, stranger, "chorus_update_reference", map[string]any{"uuid": onHidden.UUID, "title": "Mine"}))
		require.Equal(t, "Failed to remove reference: Reference with UUID "+onHidden.UUID+" not found",
			fails(t, stranger, "chorus_remove_reference", map[string]any{"uuid": onHidden.UUID}))

		// Update: the fields given; clearNotes clears the notes; type and url are checked again.
		var upd ReferenceView
		ok(t, pm, "chorus_update_reference", map[string]any{"uuid": first.UUID, "title": "Apollo monorepo", "clearNotes": true}, &upd)
		require.Equal(t, "Apollo monorepo", upd.Title)
		require.Nil(t, upd.Notes, "clearNotes clears the notes")
		require.Equal(t, "repo", upd.Type)
		require.Equal(t, first.URL, upd.URL)
		ok(t, pm, "chorus_update_reference", map[string]any{"uuid": first.UUID, "notes": "again", "url": "https://gitlab.com/acme"}, &upd)
		require.Equal(t, "again", *upd.Notes)
		require.Equal(t, "https://gitlab.com/acme", upd.URL)
		require.Equal(t, "Apollo monorepo", upd.Title, "absent fields stay")
		require.Equal(t, "Failed to update reference: Invalid reference type: wiki. Use one of docs, repo, issue_pr, paper_blog.",
			fails(t, pm, "chorus_update_reference", map[string]any{"uuid": first.UUID, "type": "wiki"}))
		require.Contains(t, fails(t, pm, "chorus_update_reference", map[string]any{"uuid": first.UUID, "url": "mailto:a@b.c"}),
			"Failed to update reference: Invalid reference url: mailto:a@b.c.")
		require.Equal(t, "Input validation error: provide at least one of type, url, title, notes or clearNotes to change",
			fails(t, pm, "chorus_update_reference", map[string]any{"uuid": first.UUID}))
		require.Equal(t, "Failed to update reference: Reference with UUID "+missing+" not found",
			fails(t, pm, "chorus_update_reference", map[string]any{"uuid": missing, "title": "x"}))
		require.Equal(t, 2, activityCount(t, e.st, task, "reference_added"), "updates record no activity")

		// Remove.
		var removed RemovedReference
		ok(t, pm, "chorus_remove_reference", map[string]any{"uuid": first.UUID}, &removed)
		require.Equal(t, RemovedReference{UUID: first.UUID, Action: "reference_removed"}, removed)
		require.Equal(t, "Failed to remove reference: Reference with UUID "+first.UUID+" not found",
			fails(t, pm, "chorus_remove_reference", map[string]any{"uuid": first.UUID}))
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, []ReferenceView{second}, v.References)

		// Ideas and proposals carry them too.
		idea := createIdea(t, pm, project, "SSO", nil)
		var onIdea ReferenceView
		ok(t, pm, "chorus_add_reference", map[string]any{"targetType": "idea", "targetUuid": idea, "type": "paper_blog",
			"url": "https://blog.example.com/sso", "title": "SSO primer"}, &onIdea)
		var iv IdeaView
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, []ReferenceView{onIdea}, iv.References)
		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		var cp CreatedProposal
		ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "P", "inputType": "idea",
			"inputUuids": []string{idea}}, &cp)
		var onProposal ReferenceView
		ok(t, pm, "chorus_add_reference", map[string]any{"targetType": "proposal", "targetUuid": cp.UUID, "type": "docs",
			"url": "https://docs.example.com", "title": "Docs"}, &onProposal)
		var pv ProposalView
		ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": cp.UUID}, &pv)
		require.Equal(t, []ReferenceView{onProposal}, pv.References)

		// A retry with the same requestId adds nothing twice.
		args := map[string]any{"targetType": "idea", "targetUuid": idea, "type": "docs", "url": "https://a.dev", "title": "A", "requestId": "ref-a"}
		var r1, r2 ReferenceView
		ok(t, pm, "chorus_add_reference", args, &r1)
		ok(t, pm, "chorus_add_reference", args, &r2)
		require.Equal(t, r1, r2)
		require.Equal(t, 2, referenceCount(t, e.st, idea))
		require.Equal(t, 2, activityCount(t, e.st, idea, "reference_added"))
	})
}

// Inline references on the creates are fail-soft (docs/rules.md §4.12): the entity is created,
// the valid references are added, and each invalid one is reported with its position and the
// fix, never dropped silently.
func TestInlineReferencesAreFailSoft(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		project := createProject(t, admin, "Apollo")
		refs := []map[string]any{
			{"type": "docs", "url": "https://docs.example.com/a", "title": "A"},
			{"type": "website", "url": "https://example.com", "title": "Bad type"},
			{"type": "repo", "url": "github.com/acme", "title": "No scheme"},
			{"type": "repo", "url": "https://github.com/acme", "title": "   "},
			{"type": "issue_pr", "url": "https://github.com/acme/pull/1", "title": "B", "notes": "the fix"},
		}
		wantErrs := []ReferenceError{
			{Index: 1, URL: "https://example.com", Title: "Bad type", Error: "Invalid reference type: website. Use one of docs, repo, issue_pr, paper_blog."},
			{Index: 2, URL: "github.com/acme", Title: "No scheme", Error: "Invalid reference url: github.com/acme. Give a full address starting with http:// or https://."},
			{Index: 3, URL: "https://github.com/acme", Title: "   ", Error: "Reference title must not be blank: say what the link is."},
		}
		requireRefs := func(got []ReferenceView, target, typ string) {
			t.Helper()
			require.Len(t, got, 2)
			require.Equal(t, "A", got[0].Title, "input order is creation order")
			require.Equal(t, "B", got[1].Title)
			require.Equal(t, "the fix", *got[1].Notes)
			for _, r := range got {
				require.Equal(t, target, r.TargetUUID)
				require.Equal(t, typ, r.TargetType)
			}
			require.Equal(t, 2, activityCount(t, e.st, target, "reference_added"))
		}

		var ci CreatedIdea
		ok(t, pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "SSO", "references": refs}, &ci)
		require.Equal(t, wantErrs, ci.ReferenceErrors)
		var iv IdeaView
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": ci.UUID}, &iv)
		requireRefs(iv.References, ci.UUID, "idea")

		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": ci.UUID}, nil)
		res := call(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "P", "inputType": "idea",
			"inputUuids": []string{ci.UUID}, "references": refs})
		require.False(t, res.IsError, text(res))
		cp := decode[CreatedProposal](t, res)
		require.Equal(t, wantErrs, cp.ReferenceErrors)
		require.Contains(t, text(res), `"referenceErrors":[{"index":1,`)
		var pv ProposalView
		ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": cp.UUID}, &pv)
		requireRefs(pv.References, cp.UUID, "proposal")

		var ct CreatedTasks
		ok(t, pm, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "One", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}, "references": refs},
			{"title": "Two", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		}}, &ct)
		one := "One"
		var taskErrs []ReferenceError
		for _, x := range wantErrs {
			x.Task = &one
			taskErrs = append(taskErrs, x)
		}
		require.Equal(t, taskErrs, ct.ReferenceErrors)
		var tv TaskView
		ok(t, pm, "chorus_get_task", map[string]any{"taskUuid": ct.Tasks[0].UUID}, &tv)
		requireRefs(tv.References, ct.Tasks[0].UUID, "task")
		ok(t, pm, "chorus_get_task", map[string]any{"taskUuid": ct.Tasks[1].UUID}, &tv)
		require.Empty(t, tv.References)

		// All valid: no referenceErrors key at all.
		res = call(t, pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "Clean", "references": refs[:1]})
		require.False(t, res.IsError, text(res))
		require.NotContains(t, text(res), "referenceErrors")
		// A reference missing a required field is a malformed call: nothing is created.
		msg := fails(t, pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "Bad",
			"references": []map[string]any{{"type": "docs", "title": "no url"}}})
		require.Equal(t, "Input validation error: references[0].url is required", msg)
	})
}

// refOutage is a query hook that cuts the database off once, around the first write of
// references: before the insert (the create committed, its references did not) or right after
// their transaction commits (everything committed, the call cannot record its outcome).
type refOutage struct {
	afterCommit bool
	outage      *storetest.Outage
	seen        atomic.Bool // the references insert was seen
	fired       atomic.Bool
}

func (h *refOutage) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if strings.HasPrefix(ev.Query, "INSERT") && strings.Contains(ev.Query, `"reference_artifacts"`) {
		h.seen.Store(true)
		if !h.afterCommit && h.fired.CompareAndSwap(false, true) {
			h.outage.Down()
		}
	}
	return ctx
}

func (h *refOutage) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if h.afterCommit && ev.Query == "COMMIT" && h.seen.Load() && h.fired.CompareAndSwap(false, true) {
		h.outage.Down()
	}
}

// Inline references are written exactly once under retry (docs/write-path.md, "Exactly once"): the
// database goes away just before the references of a create are written, or just after they
// committed; once it is back, the retry with the same requestId finds the entity the first
// attempt created and leaves it with each reference once, and one activity each.
func TestInlineReferencesExactlyOnceUnderRetry(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for _, afterCommit := range []bool{false, true} {
			name := dialect + "/before-insert"
			if afterCommit {
				name = dialect + "/after-commit"
			}
			t.Run(name, func(t *testing.T) {
				e := startEnv(t, dialect, envOptions{flows: true, faultyDB: true, callTimeout: 15 * time.Second})
				admin := e.client(e.adminKey)
				project := createProject(t, admin, "Apollo")
				hook := &refOutage{afterCommit: afterCommit, outage: e.outage}
				e.st.DB.AddQueryHook(hook)
				refs := []map[string]any{{"type": "docs", "url": "https://a.dev", "title": "A"}, {"type": "nope", "url": "https://b.dev", "title": "B"},
					{"type": "repo", "url": "https://c.dev", "title": "C"}}
				args := map[string]any{"projectUuid": project, "title": "SSO", "references": refs, "requestId": "idea-with-refs"}

				first := call(t, admin, "chorus_pm_create_idea", args)
				require.True(t, hook.fired.Load(), "the outage struck")
				if !afterCommit {
					require.True(t, first.IsError)
					require.Contains(t, text(first), "cannot reach its database")
				}
				e.outage.Up()
				var ledger store.ToolRequest
				require.NoError(t, e.st.DB.NewSelect().Model(&ledger).Where("request_id = ?", "idea-with-refs").Scan(context.Background()))
				require.Equal(t, "running", ledger.State, "the first attempt's outcome was not recorded: the retry runs the call again")
				var ci CreatedIdea
				requireEventually2(t, 30*time.Second, func() bool {
					res := call(t, admin, "chorus_pm_create_idea", args)
					if res.IsError {
						require.True(t, strings.HasPrefix(text(res), "Still in progress") || strings.Contains(text(res), "cannot reach its database"), text(res))
						return false
					}
					ci = decode[CreatedIdea](t, res)
					return true
				}, "the retry gets the create's outcome")
				require.Len(t, ci.ReferenceErrors, 1)
				require.Equal(t, 1, ci.ReferenceErrors[0].Index)

				n, err := e.st.DB.NewSelect().Model((*store.Idea)(nil)).Where("project_uuid = ?", project).Count(context.Background())
				require.NoError(t, err)
				require.Equal(t, int64(1), n, "one idea")
				var iv IdeaView
				ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": ci.UUID}, &iv)
				require.Len(t, iv.References, 2, "each reference once")
				require.Equal(t, []string{"A", "C"}, []string{iv.References[0].Title, iv.References[1].Title})
				require.Equal(t, 2, activityCount(t, e.st, ci.UUID, "reference_added"), "one activity each")

				// And once more, answered from the requestId ledger.
				var again CreatedIdea
				ok(t, admin, "chorus_pm_create_idea", args, &again)
				require.Equal(t, ci, again)
				require.Equal(t, 2, referenceCount(t, e.st, ci.UUID))
			})
		}
	}
}
