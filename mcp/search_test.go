package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func searchFor(t *testing.T, s *mcpsdk.ClientSession, args map[string]any) SearchOut {
	t.Helper()
	var out SearchOut
	ok(t, s, "chorus_search", args, &out)
	require.Equal(t, len(out.Results), out.Returned)
	require.Equal(t, 1, out.Page)
	require.Equal(t, 50, out.PageSize)
	c := out.Counts
	require.Equal(t, c.Tasks+c.Ideas+c.Proposals+c.Documents+c.Projects+c.ProjectGroups, out.Total, "total is the sum of the counts")
	return out
}

func searchUUIDs(out SearchOut) []string {
	var ids []string
	for _, r := range out.Results {
		ids = append(ids, r.UUID)
	}
	return ids
}

// chorus_search (docs/rules.md §4.12): full-text over titles and text, words as prefixes, all
// required; only what the caller can see, in results and counts; kinds, scopes and uuids; query
// text that cannot break the query; and an index that follows every edit and delete.
func TestSearch(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		stranger := e.otherOwnersAgent("Stranger", perm.PMAgent, "admin_agent")

		now := store.Now()
		group := store.ProjectGroup{UUID: store.NewUUID(), CompanyUUID: e.company, Name: "Space programs",
			Description: "Missions to the moon", Visibility: "public", CreatedAt: now, UpdatedAt: now}
		_, err := e.st.DB.NewInsert().Model(&group).Exec(ctx)
		require.NoError(t, err)
		var apollo CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Apollo", "description": "Lunar landing", "groupUuid": group.UUID}, &apollo)
		project := apollo.UUID
		hermes := createPrivateProject(t, admin, "Hermes")

		var ct CreatedTasks
		ok(t, pm, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Rotate keys", "description": "Rotate the signing keys of the billing gateway before the launch window opens.",
				"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "Write docs", "description": "Explain the deploy", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		}}, &ct)
		keys := ct.Tasks[0].UUID
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": hermes, "tasks": []map[string]any{
			{"title": "Billing audit", "description": "Check every billing export", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		}}, &ct)
		hidden := ct.Tasks[0].UUID
		var doc DocumentView
		ok(t, pm, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "prd", "title": "Billing PRD",
			"content": "How billing works, end to end."}, &doc)
		idea := createIdea(t, pm, project, "Billing dashboard", map[string]any{"content": "Charts of revenue"})

		// A task is found by a word of its description, with a snippet around it.
		out := searchFor(t, stranger, map[string]any{"query": "gateway"})
		require.Equal(t, []string{keys}, searchUUIDs(out))
		r := out.Results[0]
		require.Equal(t, "task", r.EntityType)
		require.Equal(t, "Rotate keys", r.Title)
		require.Equal(t, "open", r.Status)
		require.Equal(t, project, *r.ProjectUUID)
		require.Equal(t, "Apollo", *r.ProjectName)
		require.Equal(t, "Rotate the signing keys of the billing gateway before the launch window opens.", r.Snippet)
		require.Equal(t, SearchCounts{Tasks: 1}, out.Counts)

		// A private project the caller cannot see never shows, not even in the counts.
		out = searchFor(t, admin, map[string]any{"query": "billing"})
		require.Equal(t, SearchCounts{Tasks: 2, Ideas: 1, Documents: 1}, out.Counts)
		require.Contains(t, searchUUIDs(out), hidden)
		out = searchFor(t, stranger, map[string]any{"query": "billing"})
		require.Equal(t, SearchCounts{Tasks: 1, Ideas: 1, Documents: 1}, out.Counts)
		require.NotContains(t, searchUUIDs(out), hidden)
		require.Equal(t, []string{idea, doc.UUID, keys}, searchUUIDs(out), "most recently updated first")

		// Words are prefixes, in any case, and all of them must appear.
		require.Equal(t, 3, searchFor(t, stranger, map[string]any{"query": "BILL"}).Total)
		require.Equal(t, []string{keys}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "billing launch"})))
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": "billing nowhere"}).Total)

		// Kinds.
		out = searchFor(t, stranger, map[string]any{"query": "billing", "entityTypes": []string{"document"}})
		require.Equal(t, []string{doc.UUID}, searchUUIDs(out))
		require.Equal(t, "prd", out.Results[0].Status, "a document's status is its type")
		require.Equal(t, SearchCounts{Documents: 1}, out.Counts)
		out = searchFor(t, stranger, map[string]any{"query": "billing", "entityTypes": []string{"task", "idea"}})
		require.Equal(t, SearchCounts{Tasks: 1, Ideas: 1}, out.Counts)
		require.Contains(t, fails(t, stranger, "chorus_search", map[string]any{"query": "x", "entityTypes": []string{"comment"}}),
			"Input validation error: entityTypes[0] must be one of task, idea, proposal, document, project, project_group")
		out = searchFor(t, stranger, map[string]any{"query": "lunar", "entityTypes": []string{}})
		require.Equal(t, []string{project}, searchUUIDs(out), "an empty list means every kind")
		require.Equal(t, "project", out.Results[0].EntityType)
		require.Equal(t, "active", out.Results[0].Status)
		require.Nil(t, out.Results[0].ProjectUUID)
		out = searchFor(t, stranger, map[string]any{"query": "moon"})
		require.Equal(t, []string{group.UUID}, searchUUIDs(out))
		require.Equal(t, "project_group", out.Results[0].EntityType)

		// A uuid, in any case, is that entity alone; one the caller cannot see is not found.
		out = searchFor(t, stranger, map[string]any{"query": strings.ToUpper(keys)})
		require.Equal(t, []string{keys}, searchUUIDs(out))
		require.Equal(t, SearchCounts{Tasks: 1}, out.Counts)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": idea, "entityTypes": []string{"task"}}).Total)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": hidden}).Total)
		require.Equal(t, []string{hidden}, searchUUIDs(searchFor(t, admin, map[string]any{"query": hidden})))

		// Scopes.
		out = searchFor(t, admin, map[string]any{"query": "billing", "scope": "project", "scopeUuid": hermes})
		require.Equal(t, []string{hidden}, searchUUIDs(out))
		out = searchFor(t, admin, map[string]any{"query": "billing", "scope": "group", "scopeUuid": group.UUID})
		require.Equal(t, SearchCounts{Tasks: 1, Ideas: 1, Documents: 1}, out.Counts, "the group's projects only")
		// A scopeUuid the scope does not use is refused rather than ignored (docs/rules.md §4.12).
		require.Contains(t, fails(t, admin, "chorus_search", map[string]any{"query": "billing", "scope": "global", "scopeUuid": hermes}),
			`scopeUuid only applies to scope "group" or "project"`)
		require.Equal(t, `scopeUuid is required for scope "project"`, fails(t, admin, "chorus_search", map[string]any{"query": "x", "scope": "project"}))
		require.Equal(t, `scopeUuid is required for scope "group"`, fails(t, admin, "chorus_search", map[string]any{"query": "x", "scope": "group"}))
		for _, scope := range []any{nil, "global"} {
			msg := fails(t, admin, "chorus_search", map[string]any{"query": "x", "scope": scope, "scopeUuid": project})
			require.True(t, strings.HasPrefix(msg, `Input validation error: scopeUuid only applies to scope "group" or "project"`), msg)
		}
		require.Equal(t, "Project not found", fails(t, stranger, "chorus_search", map[string]any{"query": "billing", "scope": "project", "scopeUuid": hermes}))
		require.Equal(t, "Project group not found", fails(t, stranger, "chorus_search", map[string]any{"query": "billing", "scope": "group", "scopeUuid": store.NewUUID()}))

		// Query text is data: nothing a caller types breaks the query.
		for q, want := range map[string]int{
			`"billing"`: 3, `billing*`: 3, `-billing`: 3, `billing)`: 3, `(billing`: 3, `NEAR(billing gateway)`: 0, `billing NEAR gateway`: 0,
			`billing AND`: 0, `OR`: 0, `NOT billing`: 0, `billing:*`: 3, `'billing'`: 3, `billing\`: 3, `\'`: 0, `"`: 0, `*`: 0,
			`()`: 0, `^billing`: 3, `billing & | !`: 3, `{title}: billing`: 0, `billing; DROP TABLE tasks;--`: 0, `%_`: 0, `?`: 0,
			`https://example.com/a?b=1&c='x'`: 0, `日本語`: 0, `billing 🚀`: 3, `ÄÖÜ billing`: 0, "billing\x7f": 3,
		} {
			res := call(t, stranger, "chorus_search", map[string]any{"query": q})
			require.False(t, res.IsError, "query %q: %s", q, text(res))
			require.Equal(t, want, decode[SearchOut](t, res).Total, "query %q", q)
		}
		require.Equal(t, "Input validation error: query must not be blank: give words to find, or an entity's uuid",
			fails(t, stranger, "chorus_search", map[string]any{"query": "   "}))
		require.Equal(t, "Input validation error: query must not be empty", fails(t, stranger, "chorus_search", map[string]any{"query": ""}))
		require.Equal(t, "Input validation error: query is required", fails(t, stranger, "chorus_search", map[string]any{}))

		// Non-Latin text is found by its words too.
		ok(t, pm, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Überprüfung", "description": "Größe prüfen", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		}}, &ct)
		require.Equal(t, []string{ct.Tasks[0].UUID}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "größe"})))
		require.Equal(t, []string{ct.Tasks[0].UUID}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "ÜBERPRÜF"})))

		// The index follows edits and deletes, whoever makes them.
		ok(t, pm, "chorus_update_task", map[string]any{"taskUuid": keys, "description": "Rotate the signing keys of the payments gateway."}, nil)
		require.Equal(t, SearchCounts{Ideas: 1, Documents: 1}, searchFor(t, stranger, map[string]any{"query": "billing"}).Counts)
		require.Equal(t, []string{keys}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "payments"})))
		ok(t, pm, "chorus_update_task", map[string]any{"taskUuid": keys, "title": "Renew certificates"}, nil)
		require.Equal(t, []string{keys}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "certificates"})))
		require.Equal(t, 1, searchFor(t, stranger, map[string]any{"query": "rotate keys", "entityTypes": []string{"task"}}).Counts.Tasks,
			"the description still says so")
		ok(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": keys}, nil)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": "payments"}).Total)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": keys}).Total)

		ok(t, pm, "chorus_pm_update_document", map[string]any{"documentUuid": doc.UUID, "content": "How invoicing works."}, nil)
		require.Equal(t, []string{doc.UUID}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "invoicing"})))
		require.Equal(t, []string{doc.UUID}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "billing prd"})), "the title still says it")
		ok(t, admin, "chorus_admin_delete_document", map[string]any{"documentUuid": doc.UUID}, nil)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": "invoicing"}).Total)

		ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "title": "Revenue board", "content": "Plots"}, nil)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": "billing"}).Total)
		require.Equal(t, []string{idea}, searchUUIDs(searchFor(t, stranger, map[string]any{"query": "revenue plots"})))
		ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": idea}, nil)
		require.Zero(t, searchFor(t, stranger, map[string]any{"query": "revenue"}).Total)

		// Proposals, including their descriptions.
		idea2 := createIdea(t, pm, project, "Payments", nil)
		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea2}, nil)
		var cp CreatedProposal
		ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Payments v2",
			"description": "Replace the ledger service", "inputType": "idea", "inputUuids": []string{idea2}}, &cp)
		out = searchFor(t, stranger, map[string]any{"query": "ledger", "entityTypes": []string{"proposal"}})
		require.Equal(t, []string{cp.UUID}, searchUUIDs(out))
		require.Equal(t, "draft", out.Results[0].Status)
	})
}

// A snippet is about 100 characters around the first match, cut with "...".
func TestSearchSnippet(t *testing.T) {
	long := strings.Repeat("alpha ", 40) + "needle " + strings.Repeat("omega ", 40)
	s := snippet("T", &long, []string{"needle"})
	require.True(t, strings.HasPrefix(s, "...") && strings.HasSuffix(s, "..."), s)
	require.Contains(t, s, "needle")
	require.LessOrEqual(t, len([]rune(s)), 106)
	body := "Short text\n\nwith   lines"
	require.Equal(t, "Short text with lines", snippet("T", &body, []string{"lines"}))
	require.Equal(t, "Title only", snippet("Title only", nil, []string{"title"}))
	start := "needle " + strings.Repeat("x", 200)
	require.True(t, strings.HasPrefix(snippet("T", &start, []string{"needle"}), "needle x"), "a match at the start is not cut before")
	require.Equal(t, "aneedle b", snippet("T", ptrTo("aneedle b"), []string{"needle"}), "only word starts match; no match shows the start")
}

func ptrTo[T any](v T) *T { return &v }

// chorus_search_mentionables (docs/rules.md §4.12): users of the company and agents sharing the
// caller's owner, matched by name or email in any case; agents with online status and the work
// they have in hand, online first; narrowed to who can see an entity.
func TestSearchMentionables(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		hermes := createPrivateProject(t, admin, "Hermes")
		dev := e.client(e.agent("Dev Busy", perm.DeveloperAgent))
		e.agent("Dev Idle", perm.DeveloperAgent) // never calls: offline
		stranger := e.otherOwnersAgent("Stranger", perm.DeveloperAgent)
		task := createTask(t, admin, project)
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		secret := createTask(t, admin, hermes)

		var out Mentionables
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": ""}, &out)
		var names []string
		for _, r := range out.Results {
			names = append(names, r.Type+":"+r.Name)
		}
		require.Equal(t, []string{"agent:Admin Agent", "agent:Dev Busy", "agent:Dev Idle", "user:Owner", "user:Stranger Owner"}, names,
			"online agents (least busy first), offline agents, users; the stranger's agent has another owner")
		require.Equal(t, 5, out.Total)
		byName := map[string]MentionableRow{}
		for _, r := range out.Results {
			byName[r.Name] = r
		}
		require.True(t, *byName["Admin Agent"].Online)
		require.Zero(t, *byName["Admin Agent"].ActiveCount)
		require.True(t, *byName["Dev Busy"].Online)
		require.Equal(t, 1, *byName["Dev Busy"].ActiveCount, "the claimed task")
		require.Equal(t, []string{perm.DeveloperAgent}, *byName["Dev Busy"].Roles)
		require.False(t, *byName["Dev Idle"].Online)
		require.Zero(t, *byName["Dev Idle"].ActiveCount)
		require.Nil(t, byName["Owner"].Online, "users have no online status")
		require.Equal(t, "owner@example.com", *byName["Owner"].Email)

		// Name or email, any case; limit.
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "DEV"}, &out)
		require.Len(t, out.Results, 2)
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "STRANGER@"}, &out)
		require.Len(t, out.Results, 1)
		require.Equal(t, "Stranger Owner", out.Results[0].Name, "a user by email")
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "@example.com"}, &out)
		require.Len(t, out.Results, 2)
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "", "limit": 2}, &out)
		require.Len(t, out.Results, 2)
		require.Equal(t, 5, out.Total)

		// Only people who can see the entity: the stranger's owner is no member of Hermes.
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "owner", "entityType": "task", "entityUuid": secret}, &out)
		require.Len(t, out.Results, 1)
		require.Equal(t, "Owner", out.Results[0].Name)
		ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "owner", "entityType": "task", "entityUuid": task}, &out)
		require.Len(t, out.Results, 2, "a public project: everyone")
		require.Equal(t, "Task not found", fails(t, stranger, "chorus_search_mentionables",
			map[string]any{"query": "", "entityType": "task", "entityUuid": secret}))
		require.Contains(t, fails(t, admin, "chorus_search_mentionables", map[string]any{"query": "", "entityType": "task"}),
			"entityType and entityUuid go together")

		// The stranger sees its own agent, not the company owner's; its active count leaves out hidden work.
		ok(t, stranger, "chorus_search_mentionables", map[string]any{"query": ""}, &out)
		require.Equal(t, "Stranger", out.Results[0].Name)
		require.Equal(t, "agent", out.Results[0].Type)
		require.True(t, *out.Results[0].Online)

		// An ownerless agent shares no owner: users only.
		_, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "Loner", Roles: []string{perm.DeveloperAgent}})
		require.NoError(t, err)
		ok(t, e.client(key), "chorus_search_mentionables", map[string]any{"query": ""}, &out)
		for _, r := range out.Results {
			require.Equal(t, "user", r.Type)
		}
	})
}

// An agent whose keys have been quiet for over an hour is still online while one of its active
// sessions has a recent heartbeat (docs/rules.md §4.12, §2.5), and offline once that goes stale.
func TestMentionablesOnlineFollowsSessions(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		worker := e.client(e.agent("Dev Worker", perm.DeveloperAgent))
		sess := createSessionFor(t, worker, "long-build")
		online := func() bool {
			var out Mentionables
			ok(t, admin, "chorus_search_mentionables", map[string]any{"query": "Dev Worker"}, &out)
			require.Len(t, out.Results, 1)
			return *out.Results[0].Online
		}
		quiet := store.Now().Add(-2 * time.Hour)
		_, err := e.st.DB.NewRaw("UPDATE api_keys SET last_used_at = ? WHERE agent_uuid = ?", quiet, sess.AgentUUID).Exec(ctx)
		require.NoError(t, err)
		_, err = e.st.DB.NewRaw("UPDATE agents SET last_active_at = ? WHERE uuid = ?", quiet, sess.AgentUUID).Exec(ctx)
		require.NoError(t, err)
		require.True(t, online(), "the session's heartbeat is recent")
		_, err = e.st.DB.NewRaw("UPDATE agent_sessions SET last_active_at = ? WHERE uuid = ?", quiet, sess.UUID).Exec(ctx)
		require.NoError(t, err)
		require.False(t, online(), "keys and session both quiet for two hours")
	})
}

// Words joined by punctuation are words of their own on both databases (docs/rules.md §4.12):
// "yaml" finds "config.yaml", "Dark-mode" finds "Dark mode", "1" finds "v1.2".
func TestSearchSplitsWordsAtPunctuation(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Fix config.yaml loader", "description": "ships in v1.2", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "Dark mode toggle", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
		for query, want := range map[string]string{"yaml": created.Tasks[0].UUID, "config.yaml": created.Tasks[0].UUID,
			"v1": created.Tasks[0].UUID, "Dark-mode": created.Tasks[1].UUID, "mode_toggle": created.Tasks[1].UUID} {
			var out SearchOut
			ok(t, admin, "chorus_search", map[string]any{"query": query, "entityTypes": []string{"task"}}, &out)
			require.Len(t, out.Results, 1, "query %q", query)
			require.Equal(t, want, out.Results[0].UUID, "query %q", query)
		}
	})
}

// What one search reads is bounded whatever its words and texts (issue 18; docs/rules.md
// §4.12): the first 16 words count, the store returns the first 8,192 characters of each text
// found, and the snippet reads that once for all words. BenchmarkCraftedSearch measures it.
func TestSearchScansAreBounded(t *testing.T) {
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	require.Equal(t, words[:store.MaxSearchTerms], store.SearchTerms(strings.Join(words, " ")))

	// The first word to appear wins, whichever term it is; past the scanned part, the start.
	body := "intro " + strings.Repeat("x ", 100) + "beta " + strings.Repeat("y ", 100) + "alpha end"
	require.Contains(t, snippet("T", &body, []string{"alpha", "beta"}), "beta")
	require.NotContains(t, snippet("T", &body, []string{"alpha", "beta"}), "alpha")
	far := strings.Repeat("filler ", snippetScan/7+10) + "needle"
	s := snippet("T", &far, []string{"needle"})
	require.True(t, strings.HasPrefix(s, "filler filler") && strings.HasSuffix(s, "..."), s)

	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		big := strings.Repeat("é", 3*store.SnippetChars) + " needle"
		ok(t, admin, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "prd", "title": "Big",
			"content": big}, nil)
		res, err := e.st.Search(context.Background(), store.Caller{CompanyUUID: e.company, AgentUUID: e.agentID("Admin Agent"),
			OwnerUUID: e.owner}, store.SearchRequest{Text: "needle", PerKind: 50})
		require.NoError(t, err)
		require.Len(t, res.Hits, 1, "the whole text is searched")
		require.Equal(t, store.SnippetChars, len([]rune(*res.Hits[0].Body)), "only its start is read back")
		out := searchFor(t, admin, map[string]any{"query": "needle"})
		require.Len(t, out.Results, 1)
		require.True(t, strings.HasPrefix(out.Results[0].Snippet, "ééé"), out.Results[0].Snippet)
	})
}
