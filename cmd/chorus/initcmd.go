package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/mcp"
)

// chorus init (issue 23, item 4) writes, into a project directory, what coding agents need to
// work in Chorus: the MCP connection config of each host (Claude Code, Cursor, VS Code, Codex)
// for one endpoint and a set of toolsets, and a section of an agent instruction file (AGENTS.md
// or CLAUDE.md) holding a role's playbooks, the text the server serves as MCP prompts.
//
// It never writes a key: each config refers to an environment variable in the form its host
// expands (or, for VS Code, to an input VS Code asks for once and keeps in its secret storage),
// since these files are meant to be committed. It merges into files that exist (other servers,
// inputs and text are kept; only the chorus entry or section is replaced), refuses a file it
// cannot read as its format (nothing is written) unless --force, and a second run changes nothing.

// initServerName is the name every config gives the Chorus server.
const initServerName = "chorus"

// The markers around chorus init's section of an instruction file.
const (
	initSectionBegin = "<!-- chorus:begin -->"
	initSectionEnd   = "<!-- chorus:end -->"
)

// vscodeKeyInput is the id of the VS Code input that holds the key.
const vscodeKeyInput = "chorus-api-key"

// initSettings is what every host's config is written from.
type initSettings struct {
	// url is the MCP endpoint, e.g. http://127.0.0.1:8637/api/mcp.
	url string
	// toolsets is the selection as mcp.NormalizeToolsets writes it, sent as X-Chorus-Toolsets.
	toolsets string
	// keyEnv names the environment variable that holds the key.
	keyEnv string
}

// initHost is one MCP host chorus init writes a config for.
type initHost struct {
	// name is how --host names it; label how people do.
	name, label string
	// path is the config file, relative to --dir.
	path string
	// format is "JSON" or "TOML", for the refusal of a file that is not.
	format string
	// merge returns the file's content with the chorus server set, from its current content
	// (nil when it does not exist); an error when that content cannot be read as the format.
	merge func(existing []byte, s initSettings) ([]byte, error)
	// key says where the host takes the key from.
	key func(s initSettings) string
}

var initHosts = []initHost{
	{
		name: "claude-code", label: "Claude Code", path: ".mcp.json", format: "JSON",
		// Claude Code expands ${VAR} in a .mcp.json server's url and headers.
		merge: func(existing []byte, s initSettings) ([]byte, error) {
			return mergeJSONServer(existing, "mcpServers", jsonHTTPServer{Type: "http", URL: s.url,
				Headers: initHeaders(s, "${"+s.keyEnv+"}")}, nil)
		},
		key: func(s initSettings) string { return "reads the key from $" + s.keyEnv },
	},
	{
		name: "cursor", label: "Cursor", path: filepath.Join(".cursor", "mcp.json"), format: "JSON",
		// Cursor expands ${env:VAR} in mcp.json; a server with a url is a remote one.
		merge: func(existing []byte, s initSettings) ([]byte, error) {
			return mergeJSONServer(existing, "mcpServers", jsonHTTPServer{URL: s.url,
				Headers: initHeaders(s, "${env:"+s.keyEnv+"}")}, nil)
		},
		key: func(s initSettings) string { return "reads the key from $" + s.keyEnv },
	},
	{
		name: "vscode", label: "VS Code", path: filepath.Join(".vscode", "mcp.json"), format: "JSON",
		// VS Code's ${env:VAR} is not reliably expanded in an http server's headers, so the key
		// is an input: VS Code asks for it once and keeps it in its secret storage.
		merge: func(existing []byte, s initSettings) ([]byte, error) {
			return mergeJSONServer(existing, "servers", jsonHTTPServer{Type: "http", URL: s.url,
				Headers: initHeaders(s, "${input:"+vscodeKeyInput+"}")},
				&vscodeInput{Type: "promptString", ID: vscodeKeyInput, Password: true,
					Description: "Chorus API key (cho_...): the value of " + s.keyEnv})
		},
		key: func(s initSettings) string {
			return "asks for the key once (paste the value of $" + s.keyEnv + ") and keeps it in its secret storage"
		},
	},
	{
		name: "codex", label: "Codex", path: filepath.Join(".codex", "config.toml"), format: "TOML",
		merge: mergeCodexServer,
		key: func(s initSettings) string {
			return "reads the key from $" + s.keyEnv + "; it reads a project's .codex/config.toml only in a trusted " +
				"project, so otherwise copy its [mcp_servers." + initServerName + "] table into ~/.codex/config.toml"
		},
	},
}

// initRoles maps --role to the roles of the playbooks it writes.
func initRoles() map[string][]string {
	out := map[string][]string{"all": nil}
	for _, pb := range mcp.Playbooks() {
		out[pb.Role] = []string{pb.Role}
		out["all"] = append(out["all"], pb.Role)
	}
	return out
}

func newInitCmd(g *globals) *cobra.Command {
	var (
		hosts, rawURL, toolsets, keyEnv, role, instructions, dir string
		force, printOnly                                         bool
	)
	var hostNames []string
	for _, h := range initHosts {
		hostNames = append(hostNames, h.name)
	}
	roles := slices.Sorted(maps.Keys(initRoles()))
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write the MCP config of Claude Code, Cursor, VS Code and Codex, and an AGENTS.md section, for Chorus",
		Long: `Write, into a project directory, the MCP connection config of each host for the Chorus
endpoint and a set of toolsets, and a section of an agent instruction file with a role's
playbooks (the text the server serves as MCP prompts):

  claude-code  .mcp.json            key from ${CHORUS_API_KEY}
  cursor       .cursor/mcp.json     key from ${env:CHORUS_API_KEY}
  vscode       .vscode/mcp.json     key asked for once, kept in VS Code's secret storage
  codex        .codex/config.toml   key from bearer_token_env_var (trusted projects only;
                                    otherwise copy the table into ~/.codex/config.toml)

No file holds the key, so they can be committed: set the environment variable (--key-env) to
the agent's key where the host runs. Files that exist are merged: other servers and text are
kept and only the chorus entry, or the section between <!-- chorus:begin --> and
<!-- chorus:end -->, is replaced. A file that cannot be read is refused and nothing is written,
unless --force replaces it. Running it again changes nothing. --print writes nothing and shows
what would be written.

The endpoint is --url, else CHORUS_URL, else where chorus dev last served, else
http://127.0.0.1:8637/api/mcp. The toolsets default to those the role's playbooks use.

  chorus init --host claude-code --role developer
  chorus init --toolsets develop,collab --instructions CLAUDE.md --print`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plans, s, chosen, err := planInit(g, initOptions{hosts: hosts, url: rawURL, toolsets: toolsets, keyEnv: keyEnv,
				role: role, instructions: instructions, dir: dir, force: force})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if printOnly {
				for _, p := range plans {
					fmt.Fprintf(out, "# %s (%s, %s)\n%s", p.path, p.what, p.action(), p.content)
					if !bytes.HasSuffix(p.content, []byte("\n")) {
						fmt.Fprintln(out)
					}
				}
				fmt.Fprintln(out, "# --print: nothing was written")
				return nil
			}
			changed := 0
			for _, p := range plans {
				if p.unchanged() {
					continue
				}
				if err := writeFileAtomic(p.path, p.content, p.mode); err != nil {
					return err
				}
				changed++
			}
			printInitSummary(out, plans, s, chosen, changed)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&hosts, "host", strings.Join(hostNames, ","), "hosts to write a config for, comma-separated ("+
		strings.Join(hostNames, ", ")+", all)")
	f.StringVar(&rawURL, "url", "", "the Chorus MCP endpoint, e.g. https://chorus.example.com/api/mcp (default: CHORUS_URL, "+
		"else where chorus dev last served, else http://127.0.0.1:8637/api/mcp)")
	f.StringVar(&toolsets, "toolsets", "", "toolsets to select, comma-separated (core, ideas, proposals, develop, sessions, "+
		"review, collab, projects, all; default: those the role's playbooks use)")
	f.StringVar(&keyEnv, "key-env", "CHORUS_API_KEY", "the environment variable that holds the agent's key (the key itself is never written)")
	f.StringVar(&role, "role", "developer", "whose playbooks go into the instruction file ("+strings.Join(roles, ", ")+")")
	f.StringVar(&instructions, "instructions", "AGENTS.md", "the instruction file to write the chorus section into (AGENTS.md, CLAUDE.md, none)")
	f.StringVar(&dir, "dir", ".", "the project directory to write into")
	f.BoolVar(&force, "force", false, "replace a file chorus init cannot read (its content is lost)")
	f.BoolVar(&printOnly, "print", false, "write nothing; print what would be written")
	return cmd
}

// initOptions are chorus init's flags.
type initOptions struct {
	hosts, url, toolsets, keyEnv, role, instructions, dir string
	force                                                 bool
}

// initPlan is one file chorus init would write.
type initPlan struct {
	// path is where, what is what for ("Claude Code", "instructions").
	path, what string
	// old is the current content (nil when the file does not exist); content the new one.
	old, content []byte
	mode         fs.FileMode
	// replaced: old could not be read and --force replaces it.
	replaced bool
}

func (p initPlan) unchanged() bool { return p.old != nil && bytes.Equal(p.old, p.content) }

func (p initPlan) action() string {
	switch {
	case p.old == nil:
		return "created"
	case p.replaced:
		return "replaced"
	case p.unchanged():
		return "unchanged"
	}
	return "updated"
}

// planInit validates the options and works out every file's new content, writing nothing. It
// refuses everything when one file cannot be read (unless force).
func planInit(g *globals, o initOptions) ([]initPlan, initSettings, []initHost, error) {
	var s initSettings
	chosen, err := initChosenHosts(o.hosts)
	if err != nil {
		return nil, s, nil, err
	}
	roles, ok := initRoles()[strings.ToLower(strings.TrimSpace(o.role))]
	if !ok {
		return nil, s, nil, fmt.Errorf("--role %q is not a role; the roles are %s", o.role,
			strings.Join(slices.Sorted(maps.Keys(initRoles())), ", "))
	}
	var playbooks []mcp.Playbook
	for _, pb := range mcp.Playbooks() {
		if slices.Contains(roles, pb.Role) {
			playbooks = append(playbooks, pb)
		}
	}
	list := o.toolsets
	if strings.TrimSpace(list) == "" {
		var names []string
		for _, pb := range playbooks {
			names = append(names, pb.Toolsets...)
		}
		list = strings.Join(names, ",")
	}
	if s.toolsets, err = mcp.NormalizeToolsets(list); err != nil {
		return nil, s, nil, fmt.Errorf("--toolsets: %w", err)
	}
	if s.keyEnv, err = initKeyEnv(o.keyEnv); err != nil {
		return nil, s, nil, err
	}
	if s.url, err = initEndpoint(g, o.url); err != nil {
		return nil, s, nil, err
	}
	instructions, err := initInstructionFile(o.instructions)
	if err != nil {
		return nil, s, nil, err
	}
	if info, err := os.Stat(o.dir); err != nil || !info.IsDir() {
		return nil, s, nil, fmt.Errorf("--dir %s is not a directory: give the project directory to write into", o.dir)
	}

	var plans []initPlan
	var refusals []string
	// add plans one file: merge gives its new content from the old, or, with force, content
	// that replaces what merge could not read.
	add := func(rel, what, format string, merge func(old []byte, force bool) ([]byte, error)) error {
		path, err := initTarget(o.dir, rel)
		if err != nil {
			return err
		}
		old, mode, err := readExisting(path)
		if err != nil {
			return err
		}
		content, err := merge(old, false)
		replaced := false
		if err != nil {
			if !o.force {
				refusals = append(refusals, fmt.Sprintf("cannot read %s as %s (%v)", path, format, err))
				return nil
			}
			if content, err = merge(old, true); err != nil {
				return err
			}
			replaced = true
		}
		plans = append(plans, initPlan{path: path, what: what, old: old, content: content, mode: mode, replaced: replaced})
		return nil
	}
	for _, h := range chosen {
		err := add(h.path, h.label, h.format, func(old []byte, force bool) ([]byte, error) {
			if force {
				old = nil
			}
			return h.merge(old, s)
		})
		if err != nil {
			return nil, s, nil, err
		}
	}
	if instructions != "" {
		section := initSection(s, chosen, playbooks)
		err := add(instructions, "agent instructions", "an instruction file", func(old []byte, force bool) ([]byte, error) {
			return mergeSection(old, section, force)
		})
		if err != nil {
			return nil, s, nil, err
		}
	}
	if len(refusals) > 0 {
		return nil, s, nil, fmt.Errorf("%s; nothing was written: fix it, or run again with --force to replace it",
			strings.Join(refusals, "; "))
	}
	return plans, s, chosen, nil
}

// initChosenHosts reads --host.
func initChosenHosts(list string) ([]initHost, error) {
	var names []string
	for _, h := range initHosts {
		names = append(names, h.name)
	}
	want := map[string]bool{}
	for raw := range strings.SplitSeq(list, ",") {
		name := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case name == "":
		case name == "all":
			for _, n := range names {
				want[n] = true
			}
		case slices.Contains(names, name):
			want[name] = true
		default:
			return nil, fmt.Errorf("--host %q is not a host chorus init knows; the hosts are %s, all", strings.TrimSpace(raw),
				strings.Join(names, ", "))
		}
	}
	var out []initHost
	for _, h := range initHosts {
		if want[h.name] {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--host names no host; the hosts are %s, all", strings.Join(names, ", "))
	}
	return out, nil
}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// initKeyEnv reads --key-env: the name of an environment variable, never a key.
func initKeyEnv(name string) (string, error) {
	name = strings.TrimSpace(name)
	if strings.HasPrefix(name, "cho_") {
		return "", errors.New("--key-env takes the name of the environment variable that holds the key, such as " +
			"CHORUS_API_KEY, not the key: no file chorus init writes holds a key")
	}
	if !envVarName.MatchString(name) {
		return "", fmt.Errorf("--key-env %q is not an environment variable name (letters, digits and _, not starting with a digit)", name)
	}
	return name, nil
}

// initEndpoint is the MCP endpoint to write: --url, else CHORUS_URL, else the origin chorus dev
// noted in the data dir, else the default address. It must be an http(s) URL whose path is
// empty (the endpoint's path is added) or ends in /api/mcp; toolsets go in a header.
func initEndpoint(g *globals, raw string) (string, error) {
	from := "--url"
	if strings.TrimSpace(raw) == "" {
		from, raw = "CHORUS_URL", os.Getenv("CHORUS_URL")
	}
	if strings.TrimSpace(raw) == "" {
		from, raw = "the address chorus dev noted", defaultConsoleOrigin(g.dataDir)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	path := ""
	if err == nil {
		path = strings.TrimSuffix(u.Path, "/")
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
		(path != "" && !strings.HasSuffix(path, mcp.Path)) {
		return "", fmt.Errorf("%s %q is not a Chorus MCP endpoint: give an http(s) URL ending in %s, such as "+
			"https://chorus.example.com%s (choose toolsets with --toolsets, not in the URL)", from, raw, mcp.Path, mcp.Path)
	}
	if u.User != nil {
		return "", fmt.Errorf("%s carries a user name or password; take them out: the files chorus init writes are meant "+
			"to be committed, and the key goes in the environment variable --key-env names", from)
	}
	if path == "" {
		path = mcp.Path
	}
	u.Path = path
	return u.String(), nil
}

// initInstructionFile reads --instructions: the file name, or "" for none.
func initInstructionFile(name string) (string, error) {
	for _, f := range []string{"AGENTS.md", "CLAUDE.md"} {
		if strings.EqualFold(strings.TrimSpace(name), f) {
			return f, nil
		}
	}
	if strings.EqualFold(strings.TrimSpace(name), "none") {
		return "", nil
	}
	return "", fmt.Errorf("--instructions %q is not one of AGENTS.md, CLAUDE.md, none", name)
}

// initSection is chorus init's section of an instruction file, markers included, with no final
// newline: how the agent reaches Chorus, where it starts, and the role's playbooks as the server
// serves them.
func initSection(s initSettings, hosts []initHost, playbooks []mcp.Playbook) string {
	var files, names []string
	for _, h := range hosts {
		files = append(files, "`"+filepath.ToSlash(h.path)+"`")
	}
	for _, pb := range playbooks {
		names = append(names, "`"+pb.Name+"`")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n<!-- Written by chorus init, which replaces this section when run again; edit outside the markers. -->\n", initSectionBegin)
	fmt.Fprintf(&b, "## Chorus\n\n")
	fmt.Fprintf(&b, "Work in this project is planned and tracked in Chorus, whose tools reach you from the MCP server "+
		"`%s` (%s; toolsets %s). The key is the environment variable `%s`: never write a key into a file, a commit "+
		"or a comment. If the `chorus_` tools are missing, say so and ask for the key to be set; do not work around them.\n\n",
		initServerName, strings.Join(files, ", "), s.toolsets, s.keyEnv)
	fmt.Fprintf(&b, "Start every session with `chorus_checkin` (who you are, what you may do, where you are active), "+
		"then `chorus_get_my_assignments`. The server also serves the steps below as MCP prompts (%s), which take "+
		"the uuid of an entity to start from.\n", strings.Join(names, ", "))
	for _, pb := range playbooks {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n%s\n", pb.Title, pb.About, pb.Text)
	}
	b.WriteString(initSectionEnd)
	return b.String()
}

// mergeSection puts section into an instruction file: in place of the section between the
// markers when the file has one, else at its end. Markers out of order or repeated are an error;
// with force, everything from the first marker to the last end marker (or the end of the file)
// is the section replaced.
func mergeSection(existing []byte, section string, force bool) ([]byte, error) {
	text := string(existing)
	begin, end := strings.Count(text, initSectionBegin), strings.Count(text, initSectionEnd)
	switch {
	case force && begin+end > 0:
		i := strings.Index(text, initSectionBegin)
		if i < 0 {
			i = strings.Index(text, initSectionEnd)
		}
		j := len(text)
		if k := strings.LastIndex(text, initSectionEnd); k >= i {
			j = k + len(initSectionEnd)
		}
		return []byte(text[:i] + section + text[j:]), nil
	case begin == 0 && end == 0:
		text = strings.TrimRight(text, "\n")
		if text != "" {
			text += "\n\n"
		}
		return []byte(text + section + "\n"), nil
	case begin == 1 && end == 1 && strings.Index(text, initSectionBegin) < strings.Index(text, initSectionEnd):
		i, j := strings.Index(text, initSectionBegin), strings.Index(text, initSectionEnd)+len(initSectionEnd)
		return []byte(text[:i] + section + text[j:]), nil
	}
	return nil, fmt.Errorf("its %s and %s markers are repeated or out of order", initSectionBegin, initSectionEnd)
}

// printInitSummary says what chorus init did to each file, and where each host takes the key from.
func printInitSummary(w io.Writer, plans []initPlan, s initSettings, hosts []initHost, changed int) {
	for _, p := range plans {
		fmt.Fprintf(w, "%-9s %s (%s)\n", p.action(), p.path, p.what)
	}
	if changed == 0 {
		fmt.Fprintln(w, "Nothing changed: every file is already as chorus init writes it.")
	}
	fmt.Fprintf(w, "\nThe endpoint is %s with toolsets %s. No file holds the key: set %s to the agent's key "+
		"(cho_...) in the environment each host starts from.\n", s.url, s.toolsets, s.keyEnv)
	for _, h := range hosts {
		fmt.Fprintf(w, "  %s %s.\n", h.label, h.key(s))
	}
	if os.Getenv(s.keyEnv) == "" {
		fmt.Fprintf(w, "%s is not set in this shell.\n", s.keyEnv)
	}
	claudeCode := slices.ContainsFunc(hosts, func(h initHost) bool { return h.name == "claude-code" })
	for _, p := range plans {
		if claudeCode && filepath.Base(p.path) == "AGENTS.md" {
			claude, _ := os.ReadFile(filepath.Join(filepath.Dir(p.path), "CLAUDE.md"))
			if !bytes.Contains(claude, []byte("@AGENTS.md")) {
				fmt.Fprintln(w, "Claude Code reads CLAUDE.md first: so that it sees the chorus section, add a line @AGENTS.md "+
					"to CLAUDE.md, or run again with --instructions CLAUDE.md.")
			}
		}
	}
}
