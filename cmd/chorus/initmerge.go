package main

// The config files of the hosts chorus init writes: merging its server entry into a JSON host's
// file (Claude Code, Cursor, VS Code) or Codex's TOML, keeping everything else as it was; and
// where and how each file is read and written.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/chorus-dev/chorus/mcp"
)

// initHeaders are the headers of a JSON host's server entry: the key as the host refers to it,
// and the toolsets.
func initHeaders(s initSettings, keyRef string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + keyRef, mcp.ToolsetsHeader: s.toolsets}
}

// jsonHTTPServer is a JSON host's entry for a Streamable HTTP server.
type jsonHTTPServer struct {
	Type    string            `json:"type,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// vscodeInput is an entry of VS Code's inputs: a value VS Code asks for once and keeps.
type vscodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// jsonMember is one member of a JSON object, kept in the order the file has it.
type jsonMember struct {
	key   string
	value json.RawMessage
}

// parseJSONObject reads a JSON object's members in order; whitespace alone is an empty object.
func parseJSONObject(b []byte) ([]jsonMember, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("it is not a JSON object")
	}
	var out []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonMember{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("it has more after its object")
	}
	return out, nil
}

// setJSONMember replaces the member key, or appends it.
func setJSONMember(members []jsonMember, key string, v json.RawMessage) []jsonMember {
	for i, m := range members {
		if m.key == key {
			members[i].value = v
			return members
		}
	}
	return append(members, jsonMember{key, v})
}

func getJSONMember(members []jsonMember, key string) (json.RawMessage, bool) {
	for _, m := range members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// marshalJSON writes v without HTML escapes.
func marshalJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// encodeJSONObject writes members as an object indented by two spaces, with a final newline.
func encodeJSONObject(members []jsonMember) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalJSON(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// mergeJSONServer sets the chorus entry of the object serversKey in the JSON config existing,
// keeping every other member in its order, and, when input is given, the input of the same id in
// the top-level inputs array (VS Code). A file that is not a JSON object, or whose serversKey or
// inputs have another shape, is an error.
func mergeJSONServer(existing []byte, serversKey string, server jsonHTTPServer, input *vscodeInput) ([]byte, error) {
	top, err := parseJSONObject(existing)
	if err != nil {
		return nil, err
	}
	if existing == nil && input != nil {
		top = []jsonMember{{"inputs", json.RawMessage("[]")}, {serversKey, json.RawMessage("{}")}}
	}
	var servers []jsonMember
	if raw, ok := getJSONMember(top, serversKey); ok {
		if servers, err = parseJSONObject(raw); err != nil {
			return nil, fmt.Errorf("its %s is not an object", serversKey)
		}
	}
	entry, err := marshalJSON(server)
	if err != nil {
		return nil, err
	}
	serversRaw, err := marshalJSONObjectRaw(setJSONMember(servers, initServerName, entry))
	if err != nil {
		return nil, err
	}
	top = setJSONMember(top, serversKey, serversRaw)
	if input != nil {
		var inputs []json.RawMessage
		if raw, ok := getJSONMember(top, "inputs"); ok {
			if err := json.Unmarshal(raw, &inputs); err != nil {
				return nil, errors.New("its inputs is not an array")
			}
		}
		mine, err := marshalJSON(input)
		if err != nil {
			return nil, err
		}
		found := false
		for i, in := range inputs {
			var id struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(in, &id) == nil && id.ID == input.ID {
				inputs[i], found = mine, true
			}
		}
		if !found {
			inputs = append(inputs, mine)
		}
		raw, err := marshalJSON(inputs)
		if err != nil {
			return nil, err
		}
		top = setJSONMember(top, "inputs", raw)
	}
	return encodeJSONObject(top)
}

// marshalJSONObjectRaw writes members as a compact object.
func marshalJSONObjectRaw(members []jsonMember) (json.RawMessage, error) {
	b, err := encodeJSONObject(members)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// codexTable is the [mcp_servers.chorus] table of Codex's config.toml.
func codexTable(s initSettings) string {
	q := func(v string) string { b, _ := marshalJSON(v); return string(b) } // a JSON string is a TOML basic string
	return "[mcp_servers." + initServerName + "]\n" +
		"url = " + q(s.url) + "\n" +
		"bearer_token_env_var = " + q(s.keyEnv) + "\n" +
		"http_headers = { " + q(mcp.ToolsetsHeader) + " = " + q(s.toolsets) + " }\n"
}

// tomlTableHeader matches a table header line ([a.b] or [[a.b]]) and captures its key.
var tomlTableHeader = regexp.MustCompile(`^\s*\[\[?([^\[\]]*)\]\]?\s*(#.*)?$`)

// isChorusTable says whether a table key is mcp_servers.chorus or one of its subtables.
func isChorusTable(key string) bool {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return len(parts) >= 2 && parts[0] == "mcp_servers" && parts[1] == initServerName
}

// mergeCodexServer sets the [mcp_servers.chorus] table of a Codex config.toml: the old table and
// its subtables are cut out (comments and blank lines before the next table stay) and the new one
// goes where the old one was, else at the end; the rest of the file is kept as written. The result
// is read back, so an edit that would not give exactly this server is an error.
func mergeCodexServer(existing []byte, s initSettings) ([]byte, error) {
	table := codexTable(s)
	var out []string
	if existing != nil {
		if _, err := toml.Decode(string(existing), new(map[string]any)); err != nil {
			return nil, err
		}
		lines := strings.SplitAfter(string(existing), "\n")
		at, inTable := -1, false
		var cut []string
		flush := func() { // the cut table's trailing comments and blank lines belong to what follows
			keep := len(cut)
			for keep > 0 {
				l := strings.TrimSpace(cut[keep-1])
				if l != "" && !strings.HasPrefix(l, "#") {
					break
				}
				keep--
			}
			out = append(out, cut[keep:]...)
			cut = nil
		}
		for _, l := range lines {
			if m := tomlTableHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
				if inTable && !isChorusTable(m[1]) {
					flush()
				}
				inTable = isChorusTable(m[1])
				if inTable && at < 0 {
					at = len(out)
				}
			}
			if inTable {
				cut = append(cut, l)
			} else {
				out = append(out, l)
			}
		}
		if inTable {
			flush()
		}
		if at >= 0 {
			out = slices.Insert(out, at, table)
		} else {
			text := strings.TrimRight(strings.Join(out, ""), "\n")
			out = []string{text}
			if text != "" {
				out = append(out, "\n\n")
			}
			out = append(out, table)
		}
	} else {
		out = []string{table}
	}
	merged := strings.Join(out, "")
	var check struct {
		MCPServers map[string]struct {
			URL               string            `toml:"url"`
			BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
			HTTPHeaders       map[string]string `toml:"http_headers"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(merged, &check); err != nil {
		return nil, fmt.Errorf("it defines mcp_servers.%s in a form chorus init cannot replace: %v", initServerName, err)
	}
	got := check.MCPServers[initServerName]
	if got.URL != s.url || got.BearerTokenEnvVar != s.keyEnv || len(got.HTTPHeaders) != 1 ||
		got.HTTPHeaders[mcp.ToolsetsHeader] != s.toolsets {
		return nil, fmt.Errorf("it defines mcp_servers.%s in a form chorus init cannot replace", initServerName)
	}
	return []byte(merged), nil
}

// initTarget is the file chorus init writes for rel under dir: dir/rel, or, when it or a
// directory on the way is a symbolic link, where the link leads, which must be inside dir (a
// CLAUDE.md -> AGENTS.md link is written through and stays a link). A link leading outside is an
// error, --force or not: following it would copy what it points at (a hostile checkout's
// AGENTS.md -> ~/.ssh/id_ed25519) into a file meant to be committed, or write outside the project.
func initTarget(dir, rel string) (string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	at, followed := root, false
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		next := filepath.Join(at, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			at = filepath.Join(append([]string{next}, parts[i+1:]...)...)
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			to := link
			if !filepath.IsAbs(to) {
				to = filepath.Join(at, to)
			}
			if r, err := filepath.EvalSymlinks(to); err == nil {
				to = r
			}
			if to != root && !strings.HasPrefix(to, root+string(filepath.Separator)) {
				return "", fmt.Errorf("%s is a symbolic link to %s, outside %s: chorus init writes only inside the project "+
					"directory, so nothing was written; replace the link with a file or directory of the project",
					filepath.Join(dir, filepath.Join(parts[:i+1]...)), link, dir)
			}
			next, followed = to, true
		}
		at = next
	}
	if !followed {
		return filepath.Join(dir, rel), nil
	}
	return at, nil
}

// readExisting reads a file that may not exist (nil, 0644) and its permissions.
func readExisting(path string) ([]byte, fs.FileMode, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, info.Mode().Perm(), nil
}

// writeFileAtomic writes content to path through a temporary file in its directory, so a reader
// never sees half a file.
func writeFileAtomic(path string, content []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
