package workflows

import (
	"testing"

	"github.com/chorus-dev/chorus/vocab"
	"github.com/stretchr/testify/require"
)

// The status tables are tested in package vocab; this checks what workflows adds on top.
func TestWorkflowIDs(t *testing.T) {
	e, uuid, err := vocab.ParseWorkflowID(vocab.IdeaID("abc"))
	require.NoError(t, err)
	require.Equal(t, vocab.EntityIdea, e)
	require.Equal(t, "abc", uuid)
	require.Equal(t, DerivedUUID("a", "b"), DerivedUUID("a", "b"))
	require.Equal(t, "45679274-935b-449a-a664-ac31e295b390", DerivedUUID("a", "b"), "recorded histories depend on it")
}
