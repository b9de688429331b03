package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplayRecordedHistories replays every history under testdata/histories against the
// current workflow code. A change that alters the commands a workflow issues for an existing
// history fails here: guard it with workflow.GetVersion, then record new histories next to the
// old ones (go test -tags record ./mcp -run TestRecordWorkflowHistories); never edit or remove
// one (TestRecordedHistoriesAreAppendOnly).
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		for _, kind := range []string{"idea", "proposal", "task"} {
			if strings.Contains(filepath.Base(f), "-"+kind+"-") {
				seen[kind] = true
			}
		}
	}
	for _, kind := range []string{"idea", "proposal", "task"} {
		require.True(t, seen[kind], "no recorded %s history in testdata/histories", kind)
	}
	// Histories written in the clear replay with payload encryption off and on: a worker that
	// turns encryption on keeps running the workflows that began without it (codec.go).
	keys, err := ParsePayloadKeys("k1:"+strings.Repeat("QUJD", 10)+"QUI=", "")
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, conv := range []Converters{NewConverters(nil), NewConverters(keys)} {
				r, err := NewReplayerWith(conv) // what chorus ops replay uses
				require.NoError(t, err)
				require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
			}
		})
	}
}

// TestRecordedHistoriesAreAppendOnly holds the histories to SHA256SUMS, which the recorder
// appends to: a history that was edited or removed fails, and so does one that was added by
// hand. Histories are retired only by a line in CHANGELOG.md together with a new SHA256SUMS.
func TestRecordedHistoriesAreAppendOnly(t *testing.T) {
	dir := filepath.Join("testdata", "histories")
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "malformed SHA256SUMS line %q", line)
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, "recorded history %s was removed", name)
		got := sha256.Sum256(b)
		require.Equal(t, want, hex.EncodeToString(got[:]), "recorded history %s was modified", name)
		listed[name] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		require.True(t, listed[filepath.Base(f)], "%s is not in SHA256SUMS: record histories with the recorder", f)
	}
}
