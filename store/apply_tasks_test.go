package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// legacyTaskChange is the shape TaskChange had before TaskPatch and Verdicts, as an older
// worker wrote it into an activity's input: a row with the columns to set, criterion rows with
// the columns to set, field names as Go spelled them.
type legacyTaskChange struct {
	store.Write
	UUID, CompanyUUID, ProjectUUID string
	Set                            store.Task
	Columns                        []string
	Marks                          []store.AcceptanceCriterion
	MarkColumns                    []string
	Activities                     []store.Activity
}

// TestApplyTaskChangeAcceptsTheOldShape: an activity scheduled by a worker before typed patches
// may be retried by this one with its old input; it decodes into TaskChange and writes what it
// wrote then, the same as the typed change that replaced it.
func TestApplyTaskChangeAcceptsTheOldShape(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		c := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID}
		p, err := st.CreateProject(ctx, c, store.NewProject{Name: "Main"})
		require.NoError(t, err)
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		newTask := func() (store.Task, string) {
			task := store.Task{UUID: store.NewUUID(), CompanyUUID: c.CompanyUUID, ProjectUUID: p.UUID, Title: "old title",
				Status: "open", Priority: "low", CreatedByType: "agent", CreatedByUUID: c.AgentUUID, Version: 1, CreatedAt: at, UpdatedAt: at}
			_, err := st.DB.NewInsert().Model(&task).Exec(ctx)
			require.NoError(t, err)
			crit := store.AcceptanceCriterion{UUID: store.NewUUID(), TaskUUID: task.UUID, Description: "works", Required: true,
				Status: "pending", DevStatus: "pending", CreatedAt: at, UpdatedAt: at}
			_, err = st.DB.NewInsert().Model(&crit).Exec(ctx)
			require.NoError(t, err)
			return task, crit.UUID
		}
		write := func(uuid string) store.Write {
			return store.Write{ID: "task/" + uuid + "#2@0123456789abcdef", Expect: 1, At: at.Add(time.Minute)}
		}
		holder, by, ttl, until := c.AgentUUID, c.AgentUUID, int64(600), at.Add(11*time.Minute)
		assigned := at.Add(time.Minute)

		// The old shape, encoded as an older worker encoded it.
		old, oldCrit := newTask()
		set := old
		set.Title, set.Status, set.Priority = "new title", "assigned", "high"
		set.AssigneeType, set.AssigneeUUID, set.AssignedAt, set.AssignedByUUID = ptr("agent"), &holder, &assigned, &by
		set.ClaimTTLSeconds, set.ClaimExpiresAt = &ttl, &until
		payload, err := json.Marshal(legacyTaskChange{Write: write(old.UUID), UUID: old.UUID, CompanyUUID: c.CompanyUUID,
			ProjectUUID: p.UUID, Set: set, Columns: []string{"title", "status", "priority", "assignee_type", "assignee_uuid",
				"assigned_at", "assigned_by_uuid", "claim_ttl_seconds", "claim_expires_at"},
			Marks: []store.AcceptanceCriterion{{UUID: oldCrit, DevStatus: "passed", DevEvidence: ptr("ran it"),
				DevMarkedByType: ptr("agent"), DevMarkedBy: &holder, DevMarkedAt: &assigned}},
			MarkColumns: []string{"dev_status", "dev_evidence", "dev_marked_by_type", "dev_marked_by", "dev_marked_at"}})
		require.NoError(t, err)
		var decoded store.TaskChange
		require.NoError(t, json.Unmarshal(payload, &decoded))
		require.Equal(t, vocab.TaskAssigned, decoded.NewStatus())
		_, err = st.ApplyTaskChange(ctx, decoded)
		require.NoError(t, err)
		_, err = st.ApplyTaskChange(ctx, decoded) // a retry of the applied change writes nothing
		require.NoError(t, err)

		// The typed change of the same command.
		typed, typedCrit := newTask()
		status := vocab.TaskStatus("assigned")
		_, err = st.ApplyTaskChange(ctx, store.TaskChange{Write: write(typed.UUID), UUID: typed.UUID, CompanyUUID: c.CompanyUUID,
			ProjectUUID: p.UUID, Patch: store.TaskPatch{Title: ptr("new title"), Status: &status, Priority: ptr("high"),
				Assignee: store.SetTo(&store.Assignment{Type: "agent", UUID: holder, At: assigned, By: &by}),
				Lease:    store.SetTo(&store.ClaimLease{TTLSeconds: ttl, ExpiresAt: until})},
			SelfCheck: true, Verdicts: []store.Verdict{{UUID: typedCrit, Status: "passed", Evidence: ptr("ran it"), ByType: "agent",
				By: holder, At: assigned}}})
		require.NoError(t, err)

		got := map[string]store.Task{}
		crits := map[string]store.AcceptanceCriterion{}
		for uuid, crit := range map[string]string{old.UUID: oldCrit, typed.UUID: typedCrit} {
			row, err := st.TaskRow(ctx, uuid)
			require.NoError(t, err)
			require.Equal(t, int64(2), row.Version)
			require.Equal(t, "new title", row.Title)
			require.Equal(t, vocab.TaskAssigned, row.Status)
			require.Equal(t, holder, *row.AssigneeUUID)
			require.Equal(t, ttl, *row.ClaimTTLSeconds)
			row.UUID, row.ChangeID, row.CreatedAt, row.UpdatedAt = "", "", time.Time{}, time.Time{}
			row.AssignedAt, row.ClaimExpiresAt = ptr(row.AssignedAt.UTC()), ptr(row.ClaimExpiresAt.UTC())
			got[uuid] = row
			var ac store.AcceptanceCriterion
			require.NoError(t, st.DB.NewSelect().Model(&ac).Where("uuid = ?", crit).Scan(ctx))
			require.Equal(t, vocab.CriterionPassed, ac.DevStatus)
			require.Equal(t, "ran it", *ac.DevEvidence)
			require.Equal(t, vocab.CriterionPending, ac.Status)
			ac.UUID, ac.TaskUUID, ac.CreatedAt, ac.UpdatedAt, ac.DevMarkedAt = "", "", time.Time{}, time.Time{}, nil
			crits[uuid] = ac
		}
		require.Equal(t, got[old.UUID], got[typed.UUID])
		require.Equal(t, crits[old.UUID], crits[typed.UUID])
	})
}
