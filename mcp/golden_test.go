package mcp

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite mcp/testdata/tools.golden.json from the tool table")

// TestToolSchemasGolden snapshots every tool's name, description, annotations and input and
// output schemas, so any change to the public surface shows in review. After a deliberate
// change: go test ./mcp -run TestToolSchemasGolden -update
func TestToolSchemasGolden(t *testing.T) {
	ep, err := NewEndpoint(&Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "golden")
	require.NoError(t, err)
	var tools []any
	for _, bt := range ep.tools {
		tools = append(tools, bt.tool)
	}
	got, err := json.MarshalIndent(tools, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", "tools.golden.json")
	if *updateGolden {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.JSONEq(t, string(want), string(got), "the tool surface changed; review and run with -update")
}
