package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcp"
)

// fakeKey is what CHORUS_API_KEY holds while chorus init runs in these tests: no file may hold it.
const fakeKey = "cho_ThisIsTheSecretKeyValue0123456789"

// runInit runs chorus init in dir with args, with no CHORUS_URL and an empty data dir (so the
// endpoint is the default one) unless the test set them.
func runInit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--data-dir=" + t.TempDir(), "init", "--dir", dir}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// initEnv clears CHORUS_URL and puts a key in CHORUS_API_KEY, as a developer's shell would have.
func initEnv(t *testing.T) {
	t.Setenv("CHORUS_URL", "")
	t.Setenv("CHORUS_API_KEY", fakeKey)
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v), "%s is not valid JSON:\n%s", path, b)
	return v
}

// snapshot is every file under dir and its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			rel, _ := filepath.Rel(dir, path)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return err
	}))
	return out
}

// noKeyIn fails when any file holds key material: the key, or anything shaped like one.
func noKeyIn(t *testing.T, files map[string]string) {
	t.Helper()
	shaped := regexp.MustCompile(`cho_[A-Za-z0-9]{6,}`)
	for name, content := range files {
		require.NotContains(t, content, fakeKey, name)
		require.False(t, shaped.MatchString(content), "%s holds something shaped like a key:\n%s", name, content)
	}
}

func playbookNamed(t *testing.T, name string) mcp.Playbook {
	t.Helper()
	for _, pb := range mcp.Playbooks() {
		if pb.Name == name {
			return pb
		}
	}
	t.Fatalf("no playbook %s", name)
	return mcp.Playbook{}
}

// Each host's file has the shape the host reads, refers to the key by the environment variable
// in the host's own form (or a VS Code input), and holds no key; a second run changes nothing.
func TestInitWritesEachHostsConfig(t *testing.T) {
	initEnv(t)
	dir := t.TempDir()
	out, err := runInit(t, dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "created   "+filepath.Join(dir, ".mcp.json")+" (Claude Code)")
	require.Contains(t, out, "set CHORUS_API_KEY to the agent's key")
	const url = "http://127.0.0.1:8637/api/mcp"

	claude := readJSONFile(t, filepath.Join(dir, ".mcp.json"))
	require.Equal(t, map[string]any{"mcpServers": map[string]any{"chorus": map[string]any{"type": "http", "url": url,
		"headers": map[string]any{"Authorization": "Bearer ${CHORUS_API_KEY}", "X-Chorus-Toolsets": "develop"}}}}, claude)
	cursor := readJSONFile(t, filepath.Join(dir, ".cursor", "mcp.json"))
	require.Equal(t, map[string]any{"mcpServers": map[string]any{"chorus": map[string]any{"url": url,
		"headers": map[string]any{"Authorization": "Bearer ${env:CHORUS_API_KEY}", "X-Chorus-Toolsets": "develop"}}}}, cursor)
	vscode := readJSONFile(t, filepath.Join(dir, ".vscode", "mcp.json"))
	require.Equal(t, map[string]any{"chorus": map[string]any{"type": "http", "url": url,
		"headers": map[string]any{"Authorization": "Bearer ${input:chorus-api-key}", "X-Chorus-Toolsets": "develop"}}},
		vscode["servers"])
	require.Equal(t, []any{map[string]any{"type": "promptString", "id": "chorus-api-key", "password": true,
		"description": "Chorus API key (cho_...): the value of CHORUS_API_KEY"}}, vscode["inputs"])
	var codex map[string]any
	_, err = toml.DecodeFile(filepath.Join(dir, ".codex", "config.toml"), &codex)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mcp_servers": map[string]any{"chorus": map[string]any{"url": url,
		"bearer_token_env_var": "CHORUS_API_KEY", "http_headers": map[string]any{"X-Chorus-Toolsets": "develop"}}}}, codex)

	agents, err := os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(agents), initSectionBegin))
	require.Equal(t, 1, strings.Count(string(agents), initSectionEnd))
	require.Contains(t, string(agents), "chorus_checkin")
	require.Contains(t, string(agents), playbookNamed(t, "task-to-submission").Text, "the developer's playbook, as the server serves it")
	require.NotContains(t, string(agents), playbookNamed(t, "idea-to-proposal").Text)

	files := snapshot(t, dir)
	require.Len(t, files, 5)
	noKeyIn(t, files)

	out, err = runInit(t, dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "Nothing changed")
	require.NotContains(t, out, "updated")
	require.Equal(t, files, snapshot(t, dir))
}

// Existing files keep everything but the chorus entry or section, which is replaced in place and
// not duplicated; running again changes nothing.
func TestInitMergesIntoExistingFiles(t *testing.T) {
	initEnv(t)
	dir := t.TempDir()
	write := func(rel, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o600))
	}
	write(".mcp.json", `{"mcpServers": {"github": {"type": "http", "url": "https://api.example.com/mcp/"},
		"chorus": {"type": "http", "url": "http://old.example.com/api/mcp", "headers": {"Authorization": "Bearer ${OLD}"}},
		"zed": {"command": "zed-mcp", "args": ["--a&b"]}}, "other": 1}`)
	write(".vscode/mcp.json", `{"inputs": [{"type": "promptString", "id": "gh-token", "password": true}],
		"servers": {"gh": {"type": "http", "url": "https://gh.example.com/mcp", "headers": {"Authorization": "Bearer ${input:gh-token}"}}}}`)
	write(".codex/config.toml", `# my codex settings
model = "gpt-9"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"

[mcp_servers.chorus]
url = "http://old.example.com/api/mcp"
startup_timeout_sec = 5

[mcp_servers.chorus.env_http_headers]
X-Old = "OLD"

# the figma server
[mcp_servers.figma]
url = "http://127.0.0.1:3845/mcp"
`)
	write("AGENTS.md", "# Agents\n\nRun make test.\n\n"+initSectionBegin+"\nold text\n"+initSectionEnd+"\n\n## Style\n\nTabs.\n")

	out, err := runInit(t, dir, "--url", "https://chorus.example.com", "--toolsets", "collab,develop", "--role", "all")
	require.NoError(t, err, out)
	require.Contains(t, out, "updated   "+filepath.Join(dir, ".mcp.json"))
	require.Contains(t, out, "created   "+filepath.Join(dir, ".cursor", "mcp.json"))
	const url = "https://chorus.example.com/api/mcp"

	claudeRaw, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	require.NoError(t, err)
	claude := readJSONFile(t, filepath.Join(dir, ".mcp.json"))
	servers := claude["mcpServers"].(map[string]any)
	require.Equal(t, map[string]any{"type": "http", "url": "https://api.example.com/mcp/"}, servers["github"])
	require.Equal(t, map[string]any{"command": "zed-mcp", "args": []any{"--a&b"}}, servers["zed"])
	require.Equal(t, map[string]any{"type": "http", "url": url, "headers": map[string]any{
		"Authorization": "Bearer ${CHORUS_API_KEY}", "X-Chorus-Toolsets": "develop,collab"}}, servers["chorus"])
	require.Equal(t, json.Number("1"), json.Number(strings.TrimSpace(string(mustJSON(t, claude["other"])))))
	// The members keep their order.
	require.Regexp(t, `(?s)"github".*"chorus".*"zed".*"other"`, string(claudeRaw))

	vscode := readJSONFile(t, filepath.Join(dir, ".vscode", "mcp.json"))
	require.Len(t, vscode["inputs"], 2)
	require.Equal(t, "gh-token", vscode["inputs"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, "chorus-api-key", vscode["inputs"].([]any)[1].(map[string]any)["id"])
	require.Contains(t, vscode["servers"], "gh")
	require.Contains(t, vscode["servers"], "chorus")

	codexRaw, err := os.ReadFile(filepath.Join(dir, ".codex", "config.toml"))
	require.NoError(t, err)
	var codex struct {
		Model      string                    `toml:"model"`
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	_, err = toml.Decode(string(codexRaw), &codex)
	require.NoError(t, err, string(codexRaw))
	require.Equal(t, "gpt-9", codex.Model)
	require.Equal(t, "https://docs.example.com/mcp", codex.MCPServers["docs"]["url"])
	require.Equal(t, "http://127.0.0.1:3845/mcp", codex.MCPServers["figma"]["url"])
	require.Equal(t, map[string]any{"url": url, "bearer_token_env_var": "CHORUS_API_KEY",
		"http_headers": map[string]any{"X-Chorus-Toolsets": "develop,collab"}}, codex.MCPServers["chorus"],
		"the old table and its subtable are gone")
	require.Contains(t, string(codexRaw), "# my codex settings\n")
	require.Contains(t, string(codexRaw), "# the figma server\n[mcp_servers.figma]")
	require.Regexp(t, `(?s)\[mcp_servers.docs\].*\[mcp_servers.chorus\].*\[mcp_servers.figma\]`, string(codexRaw),
		"the table is replaced where it was")

	agents, err := os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(agents), "# Agents\n\nRun make test.\n\n"+initSectionBegin), string(agents))
	require.True(t, strings.HasSuffix(string(agents), initSectionEnd+"\n\n## Style\n\nTabs.\n"), string(agents))
	require.NotContains(t, string(agents), "old text")
	require.Equal(t, 1, strings.Count(string(agents), initSectionBegin))
	for _, pb := range mcp.Playbooks() {
		require.Contains(t, string(agents), pb.Text, "--role all writes every playbook")
	}

	files := snapshot(t, dir)
	noKeyIn(t, files)
	out, err = runInit(t, dir, "--url", "https://chorus.example.com/api/mcp/", "--toolsets", "develop,collab", "--role", "all")
	require.NoError(t, err, out)
	require.Contains(t, out, "Nothing changed")
	require.Equal(t, files, snapshot(t, dir))
	info, err := os.Stat(filepath.Join(dir, ".mcp.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "a file keeps its permissions")

	// An instruction file without a section gets one at its end, once.
	write("CLAUDE.md", "# Claude\n\nBe brief.\n")
	for range 2 {
		out, err = runInit(t, dir, "--host", "claude-code", "--instructions", "CLAUDE.md")
		require.NoError(t, err, out)
	}
	claudeMD, err := os.ReadFile(filepath.Join(dir, "CLAUDE.md"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(claudeMD), "# Claude\n\nBe brief.\n\n"+initSectionBegin+"\n"), string(claudeMD))
	require.Equal(t, 1, strings.Count(string(claudeMD), initSectionBegin))
	require.True(t, strings.HasSuffix(string(claudeMD), initSectionEnd+"\n"))
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A file chorus init cannot read is refused, named, and left as it was, and nothing else is
// written; --force replaces it (an instruction file keeps its text outside the markers).
func TestInitRefusesWhatItCannotRead(t *testing.T) {
	initEnv(t)
	for _, c := range []struct{ rel, content, says string }{
		{filepath.Join(".vscode", "mcp.json"), "{\n  // my servers\n  \"servers\": {}\n}\n", "as JSON"},
		{".mcp.json", `{"mcpServers": []}`, "its mcpServers is not an object"},
		{filepath.Join(".codex", "config.toml"), "[mcp_servers.chorus\nurl = 1\n", "as TOML"},
		{filepath.Join(".codex", "config.toml"), "[mcp_servers]\nchorus = { url = \"x\" }\n", "in a form chorus init cannot replace"},
		{"AGENTS.md", "intro\n" + initSectionBegin + "\na\n" + initSectionBegin + "\nb\n" + initSectionEnd + "\nafter\n", "markers are repeated"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, c.rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(c.content), 0o644))
		out, err := runInit(t, dir)
		require.Error(t, err, out)
		require.ErrorContains(t, err, "cannot read "+path)
		require.ErrorContains(t, err, c.says)
		require.ErrorContains(t, err, "nothing was written: fix it, or run again with --force to replace it")
		require.Equal(t, map[string]string{filepath.ToSlash(c.rel): c.content}, snapshot(t, dir), "nothing was written")

		out, err = runInit(t, dir, "--force")
		require.NoError(t, err, out)
		require.Contains(t, out, "replaced  "+path)
		files := snapshot(t, dir)
		require.Len(t, files, 5)
		noKeyIn(t, files)
		if c.rel == "AGENTS.md" {
			got := files["AGENTS.md"]
			require.True(t, strings.HasPrefix(got, "intro\n"+initSectionBegin), got)
			require.True(t, strings.HasSuffix(got, initSectionEnd+"\nafter\n"), got)
			require.Equal(t, 1, strings.Count(got, initSectionBegin))
		}
		out, err = runInit(t, dir)
		require.NoError(t, err, out)
		require.Contains(t, out, "Nothing changed")
	}
}

// --print writes nothing and shows what would be written.
func TestInitPrintWritesNothing(t *testing.T) {
	initEnv(t)
	dir := t.TempDir()
	out, err := runInit(t, dir, "--print", "--host", "claude-code,codex", "--key-env", "MY_CHORUS_KEY")
	require.NoError(t, err, out)
	require.Empty(t, snapshot(t, dir))
	require.Contains(t, out, "# "+filepath.Join(dir, ".mcp.json")+" (Claude Code, created)\n{")
	require.Contains(t, out, `"Authorization": "Bearer ${MY_CHORUS_KEY}"`)
	require.Contains(t, out, `bearer_token_env_var = "MY_CHORUS_KEY"`)
	require.Contains(t, out, initSectionBegin)
	require.NotContains(t, out, ".cursor")
	require.NotContains(t, out, fakeKey)
	require.Contains(t, out, "nothing was written")
}

// Flags that name nothing chorus init knows are refused with the list of what it knows, and
// nothing is written.
func TestInitRefusesUnknownFlagValues(t *testing.T) {
	initEnv(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--toolsets", "develop,nope"}, `--toolsets: unknown toolset "nope"; the toolsets are core, ideas, proposals, develop, sessions, review, collab, projects, all`},
		{[]string{"--host", "claude-code,emacs"}, `--host "emacs" is not a host chorus init knows; the hosts are claude-code, cursor, vscode, codex, all`},
		{[]string{"--host", " , "}, "--host names no host"},
		{[]string{"--role", "tester"}, `--role "tester" is not a role; the roles are admin, all, developer, pm`},
		{[]string{"--key-env", fakeKey}, "--key-env takes the name of the environment variable that holds the key"},
		{[]string{"--key-env", "MY-KEY"}, `--key-env "MY-KEY" is not an environment variable name`},
		{[]string{"--url", "ftp://chorus.example.com/api/mcp"}, `--url "ftp://chorus.example.com/api/mcp" is not a Chorus MCP endpoint`},
		{[]string{"--url", "https://chorus.example.com/api/mcp/x/develop"}, "choose toolsets with --toolsets, not in the URL"},
		{[]string{"--instructions", "README.md"}, `--instructions "README.md" is not one of AGENTS.md, CLAUDE.md, none`},
		{[]string{"--dir", filepath.Join(dir, "missing")}, "is not a directory"},
	} {
		out, err := runInit(t, dir, c.args...)
		require.Error(t, err, "%v: %s", c.args, out)
		require.ErrorContains(t, err, c.says, c.args)
		require.NotContains(t, err.Error(), fakeKey)
	}
	t.Setenv("CHORUS_URL", "chorus.example.com")
	_, err := runInit(t, dir)
	require.ErrorContains(t, err, `CHORUS_URL "chorus.example.com" is not a Chorus MCP endpoint`)
	require.Empty(t, snapshot(t, dir))
}

// The endpoint is CHORUS_URL when set, else where chorus dev last served.
func TestInitEndpointDefaults(t *testing.T) {
	initEnv(t)
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, consoleOriginFile), []byte("http://127.0.0.1:9999\n"), 0o644))
	got, err := initEndpoint(&globals{dataDir: data}, "")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9999/api/mcp", got)
	t.Setenv("CHORUS_URL", "https://chorus.example.com/team/api/mcp")
	got, err = initEndpoint(&globals{dataDir: data}, "")
	require.NoError(t, err)
	require.Equal(t, "https://chorus.example.com/team/api/mcp", got)
	got, err = initEndpoint(&globals{dataDir: data}, "http://localhost:8637/")
	require.NoError(t, err)
	require.Equal(t, "http://localhost:8637/api/mcp", got)
}

// headerTransport sends the headers a host config names with every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The .mcp.json chorus init writes connects: with its ${VAR} expanded as Claude Code expands it,
// its url and headers reach the endpoint, which lists the selected toolsets' tools, and the
// playbook in AGENTS.md is the one the server serves as a prompt.
func TestInitClaudeCodeConfigConnects(t *testing.T) {
	ctx := context.Background()
	data, st, boot := bootstrappedDataDir(t)
	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	ech := echo.New()
	ep.Mount(ech)
	srv := httptest.NewServer(ech)
	t.Cleanup(srv.Close)
	t.Setenv("CHORUS_URL", srv.URL+mcp.Path)
	t.Setenv("CHORUS_API_KEY", boot.Key)

	dir := t.TempDir()
	cmd := newRootCmd()
	cmd.SetOut(io.Discard)
	cmd.SetArgs([]string{"--data-dir=" + data, "init", "--dir", dir, "--host", "claude-code", "--toolsets", "develop,collab"})
	require.NoError(t, cmd.ExecuteContext(ctx))
	files := snapshot(t, dir)
	for name, content := range files {
		require.NotContains(t, content, boot.Key, name)
	}

	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(files[".mcp.json"]), &cfg))
	server := cfg.MCPServers["chorus"]
	require.Equal(t, "http", server.Type)
	expand := func(s string) string { // Claude Code's ${VAR}
		return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(s, func(m string) string {
			return os.Getenv(m[2 : len(m)-1])
		})
	}
	headers := map[string]string{}
	for k, v := range server.Headers {
		headers[k] = expand(v)
	}
	require.Equal(t, "Bearer "+boot.Key, headers["Authorization"])

	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "claude-code-like", Version: "test"}, nil)
	s, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: expand(server.URL),
		HTTPClient: &http.Client{Transport: headerTransport{headers}}, MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer s.Close()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "chorus_checkin")
	require.Contains(t, names, "chorus_claim_task", "develop is selected")
	require.Contains(t, names, "chorus_add_comment", "collab is selected")
	require.NotContains(t, names, "chorus_admin_create_project", "projects is not selected")

	prompt, err := s.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "task-to-submission"})
	require.NoError(t, err)
	text := prompt.Messages[0].Content.(*mcpsdk.TextContent).Text
	_, steps, _ := strings.Cut(text, "\n\n")
	require.Contains(t, files["AGENTS.md"], steps, "AGENTS.md holds the playbook the server serves")
}

// A URL with a user name or password (a key pasted into it, or basic-auth credentials) is
// refused, without echoing them, and nothing is written: the files chorus init writes are meant
// to be committed, and no file it writes may hold a credential.
func TestInitRefusesCredentialsInTheURL(t *testing.T) {
	initEnv(t)
	dir := t.TempDir()
	for _, u := range []string{"https://admin:s3cretPassw0rd@chorus.example.com/api/mcp", "https://" + fakeKey + "@chorus.example.com/"} {
		out, err := runInit(t, dir, "--url", u)
		require.Error(t, err, out)
		require.ErrorContains(t, err, "--url carries a user name or password")
		require.NotContains(t, err.Error(), "s3cretPassw0rd")
		require.NotContains(t, err.Error(), fakeKey)
		require.Empty(t, snapshot(t, dir), "nothing is written")
	}
	t.Setenv("CHORUS_URL", "http://u:s3cretPassw0rd@127.0.0.1:8637/api/mcp")
	_, err := runInit(t, dir)
	require.ErrorContains(t, err, "CHORUS_URL carries a user name or password")
	require.Empty(t, snapshot(t, dir))
}

// A file or directory chorus init would write that is a symbolic link leading outside --dir (a
// hostile checkout's AGENTS.md -> ~/.ssh/id_ed25519, or .cursor -> ~/.config) is refused, with
// --force too, and nothing is written: following it would copy the target's content into a file
// meant to be committed, or write outside the project. A link inside --dir (CLAUDE.md ->
// AGENTS.md) is written through and stays a link.
func TestInitDoesNotFollowLinksOutOfTheDir(t *testing.T) {
	initEnv(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_ed25519")
	require.NoError(t, os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRET\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "conf"), 0o700))

	for _, c := range []struct{ link, target string }{
		{"AGENTS.md", secret}, {".cursor", filepath.Join(outside, "conf")}, {".mcp.json", filepath.Join(outside, "new.json")},
	} {
		dir := t.TempDir()
		require.NoError(t, os.Symlink(c.target, filepath.Join(dir, c.link)))
		for _, force := range []bool{false, true} {
			args := []string{"--host", "all"}
			if force {
				args = append(args, "--force")
			}
			out, err := runInit(t, dir, args...)
			require.Error(t, err, "%s: %s", c.link, out)
			require.ErrorContains(t, err, filepath.Join(dir, c.link)+" is a symbolic link to "+c.target+", outside "+dir)
			require.ErrorContains(t, err, "nothing was written")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing but the link: %v", entries)
			fi, err := os.Lstat(filepath.Join(dir, c.link))
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is left as it was")
		}
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRET\n", string(b))
	entries, err := os.ReadDir(filepath.Join(outside, "conf"))
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written outside --dir")
	require.NoFileExists(t, filepath.Join(outside, "new.json"))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# Agents\n"), 0o644))
	require.NoError(t, os.Symlink("AGENTS.md", filepath.Join(dir, "CLAUDE.md")))
	out, err := runInit(t, dir, "--host", "claude-code", "--instructions", "CLAUDE.md")
	require.NoError(t, err, out)
	fi, err := os.Lstat(filepath.Join(dir, "CLAUDE.md"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "CLAUDE.md is still a link")
	b, err = os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "# Agents\n\n"+initSectionBegin)
}
