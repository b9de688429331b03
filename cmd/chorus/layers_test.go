package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportDirection holds the one-way layers of STYLE.md: store imports no Chorus package;
// activities only store; workflows only activities and store (types); mcp never activities;
// only cmd/chorus wires everything.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/chorus-dev/chorus/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	require.NoError(t, err)
	allowed := map[string][]string{
		"perm":                {},
		"store":               {},
		"store/storetest":     {"store"},
		"activities":          {"store"},
		"workflows":           {"activities", "store"},
		"workflows/wftest":    {"workflows", "workflows/devserver"},
		"workflows/devserver": {"workflows"},
		"mcp":                 {"perm", "store", "workflows"},
		"ops":                 {"store", "workflows"},
		"cmd/chorus":          {"activities", "mcp", "ops", "perm", "store", "workflows", "workflows/devserver"},
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		ok, known := allowed[pkg]
		require.True(t, known, "package %s has no layer rule here; add one", pkg)
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			dep := strings.TrimPrefix(imp, mod)
			require.Contains(t, ok, dep, "%s must not import %s", pkg, dep)
		}
	}
}
