package vocab

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exhaustive status x command matrices: adding a status or a command fails these tests
// until someone decides what it means.

func TestIdeaStatusMatrix(t *testing.T) {
	want := map[string]map[IdeaStatus]IdeaStatus{ // "" = refused
		IdeaClaim:            {IdeaOpen: IdeaElaborating},
		IdeaRelease:          {IdeaOpen: IdeaOpen, IdeaElaborating: IdeaOpen},
		IdeaStartElaboration: {IdeaElaborating: IdeaElaborating, IdeaElaborated: IdeaElaborated},
		IdeaSkipElaboration:  {IdeaElaborating: IdeaElaborated},
		IdeaValidate:         {IdeaOpen: IdeaElaborated, IdeaElaborating: IdeaElaborated, IdeaElaborated: IdeaElaborated},
	}
	require.Len(t, ideaTable, len(want), "a command was added to ideaTable without a decision here")
	for cmd, row := range want {
		for _, from := range IdeaStatuses {
			got, err := from.Next(cmd)
			if to, ok := row[from]; ok {
				require.NoError(t, err, "%s from %s", cmd, from)
				require.Equal(t, to, got, "%s from %s", cmd, from)
			} else {
				var te *TransitionError
				require.True(t, errors.As(err, &te), "%s from %s should be refused", cmd, from)
				require.ErrorIs(t, err, ErrInvalidTransition)
			}
		}
	}
	_, err := IdeaOpen.Next("fly")
	require.Error(t, err)
}

func TestLegacyIdeaStatusesNormalise(t *testing.T) {
	for in, want := range map[string]IdeaStatus{"open": IdeaOpen, "assigned": IdeaElaborating, "in_progress": IdeaElaborating,
		"proposal_created": IdeaElaborated, "completed": IdeaElaborated, "closed": IdeaElaborated, "pending_review": IdeaElaborated} {
		got, err := ParseIdeaStatus(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := ParseIdeaStatus("bogus")
	require.Error(t, err)
}

func TestProposalStatusMatrix(t *testing.T) {
	want := map[string]map[ProposalStatus]ProposalStatus{
		ProposalEditDrafts: {ProposalDraft: ProposalDraft},
		ProposalSubmit:     {ProposalDraft: ProposalPending},
		ProposalApprove:    {ProposalPending: ProposalApproved},
		ProposalReject:     {ProposalPending: ProposalDraft},
		ProposalClose:      {ProposalPending: ProposalClosed},
		ProposalRevoke:     {ProposalApproved: ProposalDraft},
	}
	require.Len(t, proposalTable, len(want))
	for cmd, row := range want {
		for _, from := range ProposalStatuses {
			got, err := from.Next(cmd)
			if to, ok := row[from]; ok {
				require.NoError(t, err, "%s from %s", cmd, from)
				require.Equal(t, to, got)
			} else {
				require.ErrorIs(t, err, ErrInvalidTransition, "%s from %s", cmd, from)
			}
		}
	}
}

// The table of docs/rules.md §2.4, written out once more by hand.
func TestTaskMoveMatrix(t *testing.T) {
	legal := map[string]bool{
		"open>assigned": true, "open>closed": true,
		"assigned>open": true, "assigned>in_progress": true, "assigned>closed": true,
		"in_progress>to_verify": true, "in_progress>closed": true,
		"to_verify>done": true, "to_verify>in_progress": true, "to_verify>closed": true,
		"done>closed": true,
	}
	require.Len(t, taskMoves, len(TaskStatuses))
	for _, from := range TaskStatuses {
		for _, to := range TaskStatuses {
			key := fmt.Sprintf("%s>%s", from, to)
			require.Equal(t, legal[key], from.CanMove(to), key)
		}
	}
	require.Empty(t, TaskClosed.Moves())
	require.True(t, TaskDone.Resolved())
	require.True(t, TaskClosed.Resolved())
	require.False(t, TaskToVerify.Resolved(), "to_verify still blocks dependents (docs/rules.md §5.3)")
}

func TestResolvedStatuses(t *testing.T) {
	var resolved []TaskStatus
	for _, s := range TaskStatuses {
		if s.Resolved() {
			resolved = append(resolved, s)
		}
	}
	// Every status the list names is a task status (a misspelt one would resolve nothing).
	require.ElementsMatch(t, ResolvedTaskStatuses, resolved)
	require.Equal(t, []TaskStatus{TaskDone, TaskClosed}, resolved, "docs/rules.md §5.3")
}

func TestWorkflowIDs(t *testing.T) {
	e, uuid, err := ParseWorkflowID(IdeaID("abc"))
	require.NoError(t, err)
	require.Equal(t, EntityIdea, e)
	require.Equal(t, "abc", uuid)
	require.Equal(t, "proposal/p", ProposalID("p"))
	require.Equal(t, "task/t", TaskID("t"))
	for _, bad := range []string{"", "idea", "idea/", "user/x", "task-batch/x"} {
		_, _, err := ParseWorkflowID(bad)
		require.Error(t, err, bad)
	}
}

// DerivedUUID's values are part of recorded workflow histories: these must never change.
func TestDerivedUUIDIsStable(t *testing.T) {
	for want, parts := range map[string][]string{
		"45679274-935b-449a-a664-ac31e295b390": {"a", "b"},
		"aef9c82e-5451-433c-b697-b2fb74d31ffb": {""},
		"0c5bd99a-7eb7-4fa4-ba39-0115ca31a1b4": {"proposal/x", "task", "3"},
	} {
		require.Equal(t, want, DerivedUUID(parts...), parts)
		require.True(t, IsUUID(want))
	}
	require.NotEqual(t, DerivedUUID("a", "b"), DerivedUUID("a/b"+"x"))
}

func TestIsUUID(t *testing.T) {
	require.True(t, IsUUID("6F0A4B6E-5c1d-4d7e-9a43-3f2b8c1d9e70"))
	for _, bad := range []string{"", "6f0a4b6e5c1d4d7e9a433f2b8c1d9e70", "6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e7g",
		"6f0a4b6e-5c1d-4d7e-9a43_3f2b8c1d9e70", "{6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e70}"} {
		require.False(t, IsUUID(bad), bad)
	}
}
