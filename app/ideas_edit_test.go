package app

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A step of a use case that meets an outage answers with the outage, not with a refusal under
// the use case's words, and never with an error's raw text (issue 21: outages read as outages).
func TestStepRefusalPassesOutagesThrough(t *testing.T) {
	outage := fmt.Errorf("read the parent: %w", driver.ErrBadConn)
	internal := errors.New("pq: relation \"ideas\" does not exist")
	for _, always := range []bool{false, true} {
		v := Classify(stepRefusal("Failed to edit Idea: ", outage, always))
		require.Equal(t, vocab.OutcomeError, v.Outcome)
		require.Equal(t, string(vocab.FailedUnavailable), v.Kind)
		require.Same(t, internal, stepRefusal("Failed to edit Idea: ", internal, always))
	}
	refused := stepRefusal("Failed to edit Idea: ", store.NotFound("Idea"), true)
	require.Equal(t, "Failed to edit Idea: Idea not found", refused.Error())
	require.Equal(t, vocab.OutcomeRefused, Classify(refused).Outcome)
	again := stepRefusal("Failed to move Idea: ", Refuse(vocab.RefusedPrecondition, "Failed to move Idea: x"), false)
	require.Equal(t, "Failed to move Idea: x", again.Error(), "not prefixed twice")
}
