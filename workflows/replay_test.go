package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
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

// TestEveryVersionedChangeHasARecordedHistory holds the rule of docs/write-path.md ("Versions
// and deploys"): each workflow.GetVersion change id in the workflow code has a recorded history
// whose run took the change (a Version marker with that id), so the replay corpus covers the
// old branch (histories recorded before) and the new one. Record one with the recorder after
// adding a change id.
func TestEveryVersionedChangeHasARecordedHistory(t *testing.T) {
	ids := versionChangeIDs(t)
	require.NotEmpty(t, ids)
	recorded := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		r, err := os.Open(f)
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
		_ = r.Close()
		require.NoError(t, err, f)
		for _, e := range h.GetEvents() {
			m := e.GetMarkerRecordedEventAttributes()
			if e.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || m.GetMarkerName() != "Version" {
				continue
			}
			var id string
			if p, ok := m.GetDetails()["change-id"]; ok && DataConverter().FromPayloads(p, &id) == nil {
				recorded[id] = true
			}
		}
	}
	for _, id := range ids {
		require.True(t, recorded[id], "no recorded history took the versioned change %q: record one "+
			"(go test -tags record ./mcp -run TestRecordWorkflowHistories)", id)
	}
}

// versionChangeIDs are the change ids of every workflow.GetVersion call in this package's
// non-test code (string constants, resolved from the package's declarations).
func versionChangeIDs(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	consts := map[string]string{}
	var args []ast.Expr
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i < len(n.Values) {
							if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[name.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetVersion" && len(n.Args) > 1 {
						args = append(args, n.Args[1])
					}
				}
				return true
			})
		}
	}
	var ids []string
	for _, a := range args {
		switch a := a.(type) {
		case *ast.BasicLit:
			id, _ := strconv.Unquote(a.Value)
			ids = append(ids, id)
		case *ast.Ident:
			id, ok := consts[a.Name]
			require.True(t, ok, "GetVersion change id %s is not a string constant of this package", a.Name)
			ids = append(ids, id)
		default:
			t.Fatalf("GetVersion's change id at %s is neither a string literal nor a constant", fset.Position(a.Pos()))
		}
	}
	return ids
}
