package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportDirection holds the one-way layers of docs/development.md "Layout": front ends
// (mcp) -> app -> workflows -> activities -> store, and vocab, the leaf every layer may name,
// imports no Chorus package. mcp never imports activities; mcpclient only mcp (its header
// names); bench, the harness of `chorus bench`, never activities (it reaches the Chorus it
// starts through bench.Wiring); only cmd/chorus wires everything. A package of tests alone
// (deploy: the compose files and the production topology) is held to the same rule through its
// tests' imports: it drives Chorus from outside, as a client.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/chorus-dev/chorus/"
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{if .GoFiles}}{{join .Imports " "}}{{else}}{{join .TestImports " "}} {{join .XTestImports " "}}{{end}}`,
		mod+"...").Output()
	require.NoError(t, err)
	allowed := map[string][]string{
		"vocab":               {},
		"perm":                {},
		"store":               {},
		"webhook":             {},
		"store/storetest":     {"store"},
		"activities":          {"store", "webhook"},
		"workflows":           {"activities", "store"},
		"workflows/wftest":    {"workflows", "workflows/devserver"},
		"workflows/devserver": {"workflows"},
		"app":                 {"perm", "store", "webhook", "workflows"},
		"mcp":                 {"app", "perm", "store", "workflows"},
		"mcpclient":           {"mcp"},
		"runner":              {"mcpclient"},
		"console":             {"app", "perm", "store"},
		"stream":              {"app", "perm", "store"},
		"ops":                 {"store", "workflows"},
		"bench":               {"app", "mcp", "mcpclient", "ops", "perm", "store", "stream", "webhook", "workflows", "workflows/devserver"},
		"deploy":              {"mcpclient", "store", "workflows"},
		"cmd/chorus": {"activities", "app", "bench", "console", "mcp", "mcpclient", "ops", "perm", "runner", "store", "stream",
			"webhook", "workflows", "workflows/devserver"},
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
			if dep == "vocab" {
				continue // the leaf every layer may name; its own rule ({}) keeps it a leaf
			}
			require.Contains(t, ok, dep, "%s must not import %s", pkg, dep)
		}
	}
}
