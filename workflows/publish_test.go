package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// upserted is one UpsertTypedSearchAttributes call: the Keyword attributes it sets, by name.
type upserted map[string]string

// A task's commands each upsert only the search attributes they change (publishChangesOnly):
// before, each commit upserted all of them, whatever changed. The first publish of a run sets what
// the workflow's start did not (ChorusTitle, ChorusAssigneeName). The memo changes with every
// commit, since it keeps the state's digest and row version for ops check (publishDigestChange):
// one upsert a command, none at the start, whose memo already holds them.
func TestTaskWorkflowPublishesOnlyWhatChanged(t *testing.T) {
	sets, memos := claimAndStart(t, false)
	require.Equal(t, []upserted{
		{StatusKey.GetName(): "assigned", AssigneeKey.GetName(): "dev", AssigneeNameKey.GetName(): "Dev One"},
		{StatusKey.GetName(): "in_progress"},
	}, sets, "each command upserts the attributes it changed, nothing else")
	require.Len(t, memos, 2, "one memo upsert a command")
	for i, m := range memos {
		require.Equal(t, int64(i+2), m[MemoVersion], "the row version after command %d", i+1)
		require.Len(t, m[MemoDigest], 16)
		require.Equal(t, "Write the docs", m["title"])
	}
	require.NotEqual(t, memos[0][MemoDigest], memos[1][MemoDigest], "each change has its own digest")
}

// A task started sealed (payload encryption on: its ChorusTitle is SealedTitle) never publishes
// its title or its assignee's name in the search attributes, which Temporal stores in plain text.
func TestSealedTaskKeepsTextOutOfSearchAttributes(t *testing.T) {
	sets, _ := claimAndStart(t, true)
	require.Equal(t, []upserted{
		{StatusKey.GetName(): "assigned", AssigneeKey.GetName(): "dev"},
		{StatusKey.GetName(): "in_progress"},
	}, sets, "no title, no assignee name")
}

// claimAndStart runs a task workflow through a claim and a move to in_progress and returns its
// search-attribute upserts and its memo upserts.
func claimAndStart(t *testing.T, sealed bool) ([]upserted, []map[string]any) {
	t.Helper()
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyTaskChange, mock.Anything, mock.Anything).Return(store.TaskOutcome{}, nil)
	env.OnActivity(a.Blockers, mock.Anything, mock.Anything).Return([]store.TaskLink{}, nil)
	env.OnActivity(a.ChangeApplied, mock.Anything, mock.Anything, mock.Anything).Return(false, nil)
	var sets []upserted
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		u := upserted{}
		for _, k := range SearchAttributeKeys {
			if v, ok := sa.GetKeyword(k); ok {
				u[k.GetName()] = v
			}
		}
		sets = append(sets, u)
	}).Return(nil)
	var memos []map[string]any
	env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		memos = append(memos, args.Get(0).(map[string]any))
	}).Return(nil)
	env.SetTypedSearchAttributesOnStart(initialAttributes(vocab.EntityTask, "p", "Write the docs", "open", "pm-1", sealed))

	dev := Actor{Type: "agent", UUID: "dev", Name: "Dev One", CompanyUUID: "co"}
	st := TaskState{Created: true, UUID: "t", CompanyUUID: "co", ProjectUUID: "p", ProjectName: "Demo",
		Title: "Write the docs", Status: "open", Priority: "medium", CreatedBy: Party{Type: "agent", UUID: "pm-1"},
		Row: RowMark{Version: 1, ChangeID: "task-batch/b#1@r"}}
	env.SetMemoOnStart(taskStartMemo(st))
	claim := s.send(time.Second, UpdateClaimTask, TaskCommand{Actor: dev})
	start := s.send(2*time.Second, UpdateUpdateTask, UpdateTaskInput{Actor: dev, Status: ptr("in_progress")})
	env.RegisterDelayedCallback(env.CancelWorkflow, 3*time.Second)
	env.ExecuteWorkflow(TaskWorkflow, TaskRun{State: &st})
	require.NoError(t, claim.rejected)
	require.NoError(t, claim.failed)
	require.NoError(t, start.rejected)
	require.NoError(t, start.failed)
	return sets, memos
}

// keywordValue keeps a value within PostgreSQL visibility's VARCHAR(255).
func TestKeywordValueCutsLongTitles(t *testing.T) {
	require.Equal(t, "Dark mode", keywordValue("Dark mode"))
	long := strings.Repeat("é", 300)
	cut := keywordValue(long)
	require.Len(t, []rune(cut), MaxKeywordRunes)
	require.True(t, strings.HasSuffix(cut, "…"))
}
