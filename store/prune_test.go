package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// Pruning (docs/write-path.md, "Bounded growth"), on both databases: each table keeps its rows
// for its window, batch after batch, and no longer; the journal keeps the entry of the change a
// row holds now whatever its age, and a claim attempt of a call still running stays for the
// ledger's window.
func TestPruneKeepsEachWindow(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		now := time.Now().UTC().Truncate(time.Microsecond)
		r := store.Retention{Requests: time.Hour, Journal: 2 * time.Hour, ClaimAttempts: 10 * time.Minute}
		count := func(table string, where string, args ...any) int {
			q := st.DB.NewSelect().Table(table)
			if where != "" {
				q = q.Where(where, args...)
			}
			n, err := q.Count(ctx)
			require.NoError(t, err)
			return int(n)
		}

		// 1,200 ledger rows past the window (more than two batches) and one within it.
		var reqs []store.ToolRequest
		for i := range 1200 {
			reqs = append(reqs, store.ToolRequest{AgentUUID: b.Agent.UUID, RequestID: fmt.Sprintf("old-%d", i), Tool: "t",
				ArgsHash: "h", State: "done", CreatedAt: now.Add(-2 * time.Hour)})
		}
		reqs = append(reqs, store.ToolRequest{AgentUUID: b.Agent.UUID, RequestID: "fresh", Tool: "t", ArgsHash: "h",
			State: "running", CreatedAt: now.Add(-time.Minute)},
			store.ToolRequest{AgentUUID: b.Agent.UUID, RequestID: "claiming", Tool: "chorus_claim_next_task", ArgsHash: "h",
				State: "running", CreatedAt: now.Add(-30 * time.Minute)})
		_, err := st.DB.NewInsert().Model(&reqs).Exec(ctx)
		require.NoError(t, err)

		// An idea whose row holds its third change: the first two are old, the third older still.
		at := now.Add(-3 * time.Hour)
		idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "I", Status: "open",
			CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, CreatedAt: at, UpdatedAt: at}
		apply := func(c store.IdeaChange) {
			c.UUID, c.CompanyUUID, c.ProjectUUID = idea.UUID, b.Company.UUID, p.UUID
			require.NoError(t, st.ApplyIdeaChange(ctx, c))
		}
		apply(store.IdeaChange{Write: store.Write{ID: "idea/i#1@a", At: at}, Insert: &idea})
		apply(store.IdeaChange{Write: store.Write{ID: "idea/i#2@b", Expect: 1, At: at}, Patch: store.IdeaPatch{Title: ptr("J")}})
		apply(store.IdeaChange{Write: store.Write{ID: "idea/i#3@c", Expect: 2, At: now.Add(-time.Minute)},
			Patch: store.IdeaPatch{Title: ptr("K")}})
		apply(store.IdeaChange{Write: store.Write{ID: "idea/i#4@d", Expect: 3, At: at}, Patch: store.IdeaPatch{Title: ptr("L")}})

		// Claim attempts: a finished call's, old and recent; an old one of a call still running.
		for _, a := range []struct {
			request string
			age     time.Duration
		}{{"old-1", 20 * time.Minute}, {"old-2", time.Minute}, {"claiming", 20 * time.Minute}} {
			_, err := st.DB.NewRaw("INSERT INTO claim_next_attempts (agent_uuid, request_id, generation, task_uuid, updated_at) "+
				"VALUES (?, ?, 0, 't', ?)", b.Agent.UUID, a.request, now.Add(-a.age)).Exec(ctx)
			require.NoError(t, err)
		}
		_, err = st.DB.NewRaw("INSERT INTO claim_reservations (task_uuid, holder, expires_at) VALUES ('t1', 'h', ?), ('t2', 'h', ?)",
			now.Add(-time.Second), now.Add(time.Minute)).Exec(ctx)
		require.NoError(t, err)

		// Webhook deliveries: one delivered past the journal's window goes; one pending as old stays.
		hook := &store.Webhook{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, URL: "https://93.184.216.34/",
			Secret: "whsec_x", CreatedByType: "user", CreatedByUUID: b.Owner.UUID}
		require.NoError(t, st.CreateWebhook(ctx, hook))
		for i, state := range []string{store.DeliveryDelivered, store.DeliveryPending} {
			d := store.WebhookDelivery{UUID: store.NewUUID(), WebhookUUID: hook.UUID, EventSeq: int64(i + 1), EventUUID: "e", Kind: "mentioned",
				Body: "{}", State: state, CreatedAt: at, UpdatedAt: at}
			_, err := st.DB.NewInsert().Model(&d).Exec(ctx)
			require.NoError(t, err)
		}

		// Events: three numbered ones past the window (the newest of them is kept, so numbering
		// never restarts) and one not numbered yet (kept: nobody has seen it).
		for i, seq := range []any{1, 2, 3, nil} {
			_, err := st.DB.NewRaw("INSERT INTO events (seq, uuid, company_uuid, kind, created_at) VALUES (?, ?, ?, 'mentioned', ?)",
				seq, fmt.Sprintf("ev-%d", i), b.Company.UUID, now.Add(-200*time.Hour)).Exec(ctx)
			require.NoError(t, err)
		}

		got, err := st.Prune(ctx, r, now)
		require.NoError(t, err)
		require.Equal(t, store.Pruned{Requests: 1200, Journal: 2, ClaimAttempts: 1, ClaimReservations: 1, Events: 2, Deliveries: 1}, got)
		require.Equal(t, 1, count("webhook_deliveries", "state = 'pending'"), "a delivery under way stays, however old")
		require.Equal(t, 1, count("events", "seq = 3"), "the newest event stays")
		require.Equal(t, 1, count("events", "seq IS NULL"), "an event not numbered yet stays")
		require.Equal(t, 2, count("tool_requests", ""), "the ledger keeps what is within its window")
		require.Equal(t, 2, count("change_journal", "entity_uuid = ?", idea.UUID),
			"the journal keeps the recent entry and the row's own, however old")
		require.Equal(t, 1, count("change_journal", "change_id = ?", "idea/i#4@d"))
		require.Equal(t, 2, count("claim_next_attempts", ""), "a recent attempt, and a running call's, stay")
		require.Equal(t, 1, count("claim_reservations", ""))
		again, err := st.Prune(ctx, r, now)
		require.NoError(t, err)
		require.Equal(t, store.Pruned{}, again, "nothing left to prune")
		sizes, err := st.RetainedRows(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"tool_requests": 2, "change_journal": 2, "claim_next_attempts": 2, "claim_reservations": 1,
			"events": 2, "webhook_deliveries": 1}, sizes)
	})
}
