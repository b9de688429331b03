package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

func TestIdeaProgressFromState(t *testing.T) {
	for _, c := range []struct {
		name string
		s    IdeaState
		want string
	}{
		{"open", IdeaState{Created: true, Status: "open"}, store.DerivedTodo},
		{"open, an old reading ignored", IdeaState{Created: true, Status: "open", Progress: store.DerivedDone}, store.DerivedTodo},
		{"questions wait", IdeaState{Created: true, Status: "elaborating", ElaborationStatus: "pending_answers"}, store.DerivedHumanConductRequired},
		{"answers wait for validation", IdeaState{Created: true, Status: "elaborating", ElaborationStatus: "validating"}, store.DerivedInProgress},
		{"claimed, no round yet", IdeaState{Created: true, Status: "elaborating"}, store.DerivedInProgress},
		{"elaborated: the database's", IdeaState{Created: true, Status: "elaborated", Progress: store.DerivedDone}, store.DerivedDone},
		{"elaborated, not read yet", IdeaState{Created: true, Status: "elaborated"}, ""},
		{"a theme rolls up from its children", IdeaState{Created: true, Status: "open", ProgressRollup: true, Progress: store.DerivedInProgress}, store.DerivedInProgress},
		{"deleted", IdeaState{Created: true, Deleted: true, Status: "open"}, ""},
		{"not created", IdeaState{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, c.s.progress()) })
	}
}

// The activities signal idea workflows by id without importing this package.
func TestIdeaWorkflowIDsAgree(t *testing.T) {
	u := "0b6f3c1e-8a4d-4c57-9d0e-2f1a6b7c8d9e"
	require.Equal(t, IdeaID(u), activities.IdeaWorkflowID(u))
}
