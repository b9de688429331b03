package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
)

// The verification queue lists the to_verify tasks of the projects the person can see, oldest
// submission first, paged, with criteria progress; a private project the person is not in adds
// nothing, not even to the count (docs/rules.md §6.3).
func TestVerifyQueueListsVisibleTasksOldestSubmissionFirst(t *testing.T) {
	for _, dialect := range []string{"sqlite", "pg"} {
		t.Run(dialect, func(t *testing.T) { verifyQueue(t, storetest.Open(t, dialect)) })
	}
}

func verifyQueue(t *testing.T, s *store.Store) {
	ctx := context.Background()
	boot, err := s.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada", OwnerEmail: "ada@example.com", AgentName: "A"})
	require.NoError(t, err)
	company := boot.Company.UUID
	bob, err := s.CreateUser(ctx, company, "bob@example.com", "", store.RoleMember)
	require.NoError(t, err)
	admin := store.Caller{CompanyUUID: company, AgentUUID: boot.Owner.UUID, OwnerUUID: boot.Owner.UUID, ActorType: "user"}
	public, err := s.CreateProject(ctx, admin, store.NewProject{Name: "Public"})
	require.NoError(t, err)
	hidden, err := s.CreateProject(ctx, admin, store.NewProject{Name: "Hidden", Visibility: "private"})
	require.NoError(t, err)
	shared, err := s.CreateProject(ctx, admin, store.NewProject{Name: "Shared", Visibility: "private"})
	require.NoError(t, err)
	_, err = s.SetProjectMember(ctx, company, shared.UUID, bob.UUID, "viewer")
	require.NoError(t, err)

	base := time.Now().UTC().Add(-time.Hour)
	task := func(project, title string, status vocab.TaskStatus, submitted time.Duration, criteria ...string) string {
		id := store.NewUUID()
		_, err := s.DB.NewInsert().Model(&store.Task{UUID: id, CompanyUUID: company, ProjectUUID: project, Title: title,
			Status: status, Priority: "medium", CreatedByType: "agent", CreatedByUUID: store.NewUUID(), ChangeID: store.NewUUID(),
			CreatedAt: base, UpdatedAt: base.Add(submitted)}).Exec(ctx)
		require.NoError(t, err)
		_, err = s.DB.NewInsert().Model(&store.Activity{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project,
			TargetType: "task", TargetUUID: id, ActorType: "agent", ActorUUID: store.NewUUID(), Action: "submitted",
			CreatedAt: base.Add(submitted)}).Exec(ctx)
		require.NoError(t, err)
		for i, mark := range criteria {
			_, err = s.DB.NewInsert().Model(&store.AcceptanceCriterion{UUID: store.NewUUID(), TaskUUID: id, Description: "c",
				Required: true, DevStatus: "passed", Status: vocab.CriterionStatus(mark), SortOrder: i, CreatedAt: base, UpdatedAt: base}).Exec(ctx)
			require.NoError(t, err)
		}
		return id
	}
	late := task(public.UUID, "late", vocab.TaskToVerify, 30*time.Minute, "passed", "failed", "pending")
	early := task(shared.UUID, "early", vocab.TaskToVerify, 10*time.Minute)
	task(hidden.UUID, "hidden", vocab.TaskToVerify, 5*time.Minute)
	task(public.UUID, "not waiting", vocab.TaskInProgress, time.Minute)
	mid := task(public.UUID, "mid", vocab.TaskToVerify, 20*time.Minute)

	a := &App{Store: s}
	asBob := Request{Who: UserPrincipal(bob)}
	rows, total, err := a.VerifyQueue(ctx, asBob, Page{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, 3, total, "the hidden project's task is not counted")
	require.Len(t, rows, 2)
	assert.Equal(t, []string{early, mid}, []string{rows[0].UUID, rows[1].UUID}, "oldest submission first")
	assert.Equal(t, "Shared", rows[0].ProjectName)
	assert.WithinDuration(t, base.Add(10*time.Minute), rows[0].SubmittedAt, time.Second)

	rows, _, err = a.VerifyQueue(ctx, asBob, Page{Limit: 2, Offset: 2})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, late, rows[0].UUID)
	assert.Equal(t, [4]int{3, 1, 1, 3}, [4]int{rows[0].Criteria, rows[0].Passed, rows[0].Failed, rows[0].SelfPassed})

	_, total, err = a.VerifyQueue(ctx, Request{Who: UserPrincipal(&boot.Owner)}, Page{})
	require.NoError(t, err)
	assert.Equal(t, 4, total, "their creator, a member of each, sees every project's")
}

// Marks are checked before anything is sent: a criterion uuid that is not a uuid and a status
// other than passed or failed are refused with the tools' field-named words.
func TestCheckMarksNamesTheField(t *testing.T) {
	err := checkMarks([]CriterionMark{{UUID: store.NewUUID(), Status: "passed"}, {UUID: "nope", Status: "passed"}})
	require.EqualError(t, err, `Input validation error: criteria[1].uuid must be a uuid, got "nope"`)
	err = checkMarks([]CriterionMark{{UUID: store.NewUUID(), Status: "done"}})
	require.EqualError(t, err, `Input validation error: criteria[0].status must be one of passed, failed, got "done"`)
	marks := []CriterionMark{{UUID: "ABCDEF00-0000-4000-8000-000000000000", Status: "failed"}}
	require.NoError(t, checkMarks(marks))
	assert.Equal(t, "abcdef00-0000-4000-8000-000000000000", marks[0].UUID)
}
