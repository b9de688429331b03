package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// The command line's part of the abuse suite (issue 18; the rest is mcp/abuse_test.go): names an
// agent wrote reach the operator's terminal as text, never as control sequences.

// evil is a name that, printed raw, would retitle the terminal (OSC), ring it, clear it (CSI,
// 7-bit and 8-bit), return the cursor and reverse what follows.
const evil = "Evil\x1b]0;pwned\x07\x1b[2J\u009b2J\r\u202eevil\x7f"

// requireTerminalSafe fails when out holds a byte or character that a terminal acts on.
func requireTerminalSafe(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "output is not UTF-8: %q", out)
	for _, r := range out {
		if r == '\n' || r == '\t' {
			continue
		}
		require.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r),
			"the output carries %U raw: %q", r, out)
	}
}

func TestAbuseCLIPrintsNoTerminalEscapes(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	owner := store.Caller{CompanyUUID: boot.Company.UUID, OwnerUUID: boot.Owner.UUID}
	_, err := st.CreateProject(ctx, owner, store.NewProject{Name: evil})
	require.NoError(t, err)
	_, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: boot.Company.UUID, Name: evil, Roles: []string{perm.PMAgent},
		OwnerUUID: &boot.Owner.UUID})
	require.NoError(t, err)
	data := "--data-dir=" + dir

	for _, args := range [][]string{{"project", "list"}, {"project", "list", "--json"}, {"agent", "list"}, {"agent", "list", "--json"},
		{"key", "list"}} {
		out := runChorus(t, append([]string{data}, args...)...)
		requireTerminalSafe(t, out)
		require.Contains(t, out, `Evil\u001b]0;pwned\u0007\u001b[2J\u009b2J`, "chorus %v shows the name, escaped", args)
		if args[len(args)-1] == "--json" {
			var rows []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &rows), "chorus %v stays JSON", args)
			found := false
			for _, r := range rows {
				found = found || r["name"] == evil
			}
			require.True(t, found, "chorus %v: the JSON still means the name as written", args)
		}
	}

	// chorus mcp call prints what the server answers: the same.
	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	ech := echo.New()
	ep.Mount(ech)
	srv := httptest.NewServer(ech)
	t.Cleanup(srv.Close)
	t.Setenv("CHORUS_URL", srv.URL+mcp.Path)
	t.Setenv("CHORUS_API_KEY", key)
	for _, args := range [][]string{{"mcp", "call", "chorus_list_projects"}, {"mcp", "call", "chorus_checkin", "--field", "agent.name"}} {
		out := runChorus(t, append([]string{data}, args...)...)
		requireTerminalSafe(t, out)
		require.Contains(t, out, `Evil\u001b]0;pwned\u0007`, "chorus %v", args)
	}
	// A refusal's text goes to standard error, through the same filter.
	cmd := newRootCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{data, "mcp", "call", "chorus_get_project", `{"projectUuid":"` + store.NewUUID() + `"}`})
	require.Error(t, cmd.ExecuteContext(ctx))
	require.Equal(t, "Project not found\n", stderr.String())
}

// terminalSafe on its own: every control escaped, the rest untouched, a character split
// between two writes judged whole, and JSON still valid and the same.
func TestTerminalSafeWriter(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand\nnewlines":  "plain text, tabs\tand\nnewlines",
		"é ü 日本 🙂":                         "é ü 日本 🙂",
		"\x1b[31mred\x1b[0m":               `\u001b[31mred\u001b[0m`,
		"bell\a back\b cr\r del\x7f":       `bell\u0007 back\u0008 cr\u000d del\u007f`,
		"csi\u009b2J osc\u009d0;x\u009c":   `csi\u009b2J osc\u009d0;x\u009c`,
		"rtl\u202eoverride\u2066iso\u2069": `rtl\u202eoverride\u2066iso\u2069`,
		"raw 8-bit csi \x9b2J":             "raw 8-bit csi \uFFFD2J",
	} {
		var b bytes.Buffer
		_, err := terminalSafe(&b).Write([]byte(in))
		require.NoError(t, err)
		require.Equal(t, want, b.String(), "%q", in)
	}

	// Split in every place: the same as whole.
	in := []byte("a\u009bé日🙂\x1b")
	for cut := 0; cut <= len(in); cut++ {
		var b bytes.Buffer
		w := terminalSafe(&b)
		_, _ = w.Write(in[:cut])
		_, _ = w.Write(in[cut:])
		require.Equal(t, `a\u009bé日🙂\u001b`, b.String(), "cut at %d", cut)
	}

	var b bytes.Buffer
	require.NoError(t, json.NewEncoder(terminalSafe(&b)).Encode(map[string]string{"name": evil}))
	var back map[string]string
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Equal(t, evil, back["name"])
	require.False(t, strings.ContainsAny(b.String(), "\x1b\x07\u009b\u202e"))
}
