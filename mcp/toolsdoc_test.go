package mcp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolsReferenceIsCurrent keeps docs/tools.md equal to what the tool table generates.
// After a change to a tool: go generate ./mcp (which runs this test with -update).
func TestToolsReferenceIsCurrent(t *testing.T) {
	got, err := ToolsReference()
	require.NoError(t, err)
	path := filepath.Join("..", "docs", "tools.md")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "generate it with: go generate ./mcp")
	require.Equal(t, string(want), got, "docs/tools.md is stale: run go generate ./mcp and review the difference")
}
