package workflows

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// The SDK's "Activity error." records of Chorus outcomes are lowered below WARN; other activity
// failures stay at ERROR.
func TestQuietOutcomesKeepsErrorForFailures(t *testing.T) {
	var buf bytes.Buffer
	l := QuietOutcomes(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))

	l.Error("Activity error.", "Error", temporal.NewNonRetryableApplicationError("Parent idea not found", "chorus.NotFound", nil))
	l.Error("Activity error.", "Error", temporal.NewNonRetryableApplicationError("conflict", "chorus.ProjectionConflict", nil))
	require.Empty(t, buf.String(), "refusals and conflicts are outcomes")

	l.Error("Activity error.", "Error", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"))
	require.Contains(t, buf.String(), "level=ERROR")
	buf.Reset()
	l.Error("Activity error.", "Error", temporal.NewApplicationError("retryable", "chorus.Something", nil))
	require.Contains(t, buf.String(), "level=ERROR", "a retryable failure is not an outcome")
	buf.Reset()
	l.Error("projection conflict: the row and the workflow disagree", "Error",
		temporal.NewNonRetryableApplicationError("conflict", "chorus.ProjectionConflict", nil))
	require.Contains(t, buf.String(), "level=ERROR", "the workflow's own alert stays")
}
