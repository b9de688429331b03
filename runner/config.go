package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/vocab"
)

// DefaultKinds are the events that need the agent to act, the ones a runner wakes it for unless
// told otherwise: work given to it, a word addressed to it, an answer or a decision it waits for.
var DefaultKinds = []string{"task_assigned", "task_reopened", "mentioned", "elaboration_answered",
	"proposal_rejected", "gate_refused", "gate_applied"}

// Defaults of an agent's settings.
const (
	DefaultURL           = "http://127.0.0.1:8637"
	DefaultMaxConcurrent = 2
	DefaultTurnTimeout   = 30 * time.Minute
)

// Agent is one agent a runner serves, resolved and checked (Validate): its server, its key, the
// command a turn runs and where, and the runner's state directory for it.
type Agent struct {
	// Name names the agent in logs and its default state directory ("" for one agent given by
	// flags: the key's display prefix is used).
	Name string
	// URL is the server's origin (scheme://host:port, no path): events come from URL/api/events,
	// and a turn's CHORUS_URL is URL/api/mcp.
	URL string
	// Key is the agent's API key (cho_...). KeySource says where it came from, for errors.
	Key, KeySource string
	// Command is run by `sh -c` for each turn, in Workdir.
	Command, Workdir string
	// Kinds are the event kinds that start a turn (DefaultKinds when empty).
	Kinds []string
	// MaxConcurrent caps the turns running at once (each of another idea).
	MaxConcurrent int
	// TurnTimeout ends a turn that runs longer, killing its process group.
	TurnTimeout time.Duration
	// StateDir holds the journal, the lock and each turn's prompt and log
	// (default <Workdir>/.chorus/runner/<Name or key prefix>).
	StateDir string
	// NoCatchUp turns off the catch-up turn a runner runs when StateDir has no journal yet
	// (the work assigned before the runner first connected); false runs it.
	NoCatchUp bool
}

// AgentSpec is one agent as written in a runner config file (JSON) or by flags, before it is
// checked: exactly one of KeyEnv (the name of an environment variable holding the key) and
// KeyFile (a file holding it). The key itself is never written here. TurnTimeout is a Go
// duration ("30m", "1h30m"). CatchUp false: no catch-up turn on a state directory's first start.
type AgentSpec struct {
	Name          string   `json:"name"`
	URL           string   `json:"url,omitempty"`
	KeyEnv        string   `json:"keyEnv,omitempty"`
	KeyFile       string   `json:"keyFile,omitempty"`
	Command       string   `json:"command"`
	Workdir       string   `json:"workdir,omitempty"`
	Kinds         []string `json:"kinds,omitempty"`
	MaxConcurrent int      `json:"maxConcurrent,omitempty"`
	TurnTimeout   string   `json:"turnTimeout,omitempty"`
	StateDir      string   `json:"stateDir,omitempty"`
	// CatchUp, when false, turns off the first start's catch-up turn (default true).
	CatchUp *bool `json:"catchUp,omitempty"`
}

// ConfigFile is a runner config file: the server's origin for every agent that names none, and
// the agents.
//
//	{"url": "http://127.0.0.1:8637",
//	 "agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "claude -p", "workdir": "/src/app"}]}
type ConfigFile struct {
	URL    string      `json:"url,omitempty"`
	Agents []AgentSpec `json:"agents"`
}

// LoadConfig reads and checks a runner config file (see ConfigFile); unknown fields are refused
// so that a misspelt one is not silently ignored. An agent's url is its own, else the file's,
// else defaultURL (then DefaultURL). Errors name the file, the agent and the field.
func LoadConfig(path, defaultURL string, getenv func(string) string) ([]Agent, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cf ConfigFile
	if err := dec.Decode(&cf); err != nil {
		return nil, fmt.Errorf("%s: not a runner config (%v); expected {\"url\": ..., \"agents\": [{\"name\", \"keyEnv\" or \"keyFile\", \"command\", \"workdir\", ...}]}", path, err)
	}
	if len(cf.Agents) == 0 {
		return nil, fmt.Errorf("%s: agents is empty; list at least one agent", path)
	}
	base := filepath.Dir(path)
	out := make([]Agent, 0, len(cf.Agents))
	for i, spec := range cf.Agents {
		if strings.TrimSpace(spec.Name) == "" {
			return nil, fmt.Errorf("%s: agents[%d].name is required (it names the agent's logs and state directory)", path, i)
		}
		if spec.URL == "" {
			spec.URL = cf.URL
		}
		if spec.URL == "" {
			spec.URL = defaultURL
		}
		// Relative paths in the file are relative to the file.
		for _, p := range []*string{&spec.KeyFile, &spec.Workdir, &spec.StateDir} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(base, *p)
			}
		}
		a, err := spec.Resolve(getenv)
		if err != nil {
			return nil, fmt.Errorf("%s: agents[%d] (%s): %w", path, i, spec.Name, err)
		}
		out = append(out, a)
	}
	if err := checkDistinct(out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// checkDistinct refuses two agents with one name or one state directory.
func checkDistinct(agents []Agent) error {
	names, dirs := map[string]bool{}, map[string]string{}
	for _, a := range agents {
		if names[a.Name] {
			return fmt.Errorf("two agents are named %q; give each its own name", a.Name)
		}
		names[a.Name] = true
		if other, ok := dirs[a.StateDir]; ok {
			return fmt.Errorf("agents %q and %q share the state directory %s; give each its own stateDir", other, a.Name, a.StateDir)
		}
		dirs[a.StateDir] = a.Name
	}
	return nil
}

// Resolve checks a spec and reads its key: the key from KeyEnv or KeyFile (one of them), a
// command, a workdir that is a directory, known kinds, a positive cap and timeout. Errors name
// the field (as the config file spells it) and say what to do.
func (s AgentSpec) Resolve(getenv func(string) string) (Agent, error) {
	a := Agent{Name: strings.TrimSpace(s.Name), Command: strings.TrimSpace(s.Command), MaxConcurrent: s.MaxConcurrent,
		TurnTimeout: DefaultTurnTimeout, NoCatchUp: s.CatchUp != nil && !*s.CatchUp}
	origin, err := Origin(s.URL)
	if err != nil {
		return Agent{}, err
	}
	a.URL = origin
	switch {
	case s.KeyEnv != "" && s.KeyFile != "":
		return Agent{}, errors.New("keyEnv and keyFile are both set; use one")
	case s.KeyEnv != "":
		a.Key, a.KeySource = strings.TrimSpace(getenv(s.KeyEnv)), "environment variable "+s.KeyEnv
		if a.Key == "" {
			return Agent{}, fmt.Errorf("keyEnv: the environment variable %s is empty or unset; export the agent's API key in it", s.KeyEnv)
		}
	case s.KeyFile != "":
		b, err := os.ReadFile(s.KeyFile)
		if err != nil {
			return Agent{}, fmt.Errorf("keyFile: %w", err)
		}
		a.Key, a.KeySource = strings.TrimSpace(string(b)), "file "+s.KeyFile
		if a.Key == "" {
			return Agent{}, fmt.Errorf("keyFile: %s is empty; write the agent's API key in it", s.KeyFile)
		}
	default:
		return Agent{}, errors.New("no key: set keyEnv (an environment variable holding the agent's API key) or keyFile")
	}
	if !strings.HasPrefix(a.Key, "cho_") || strings.ContainsAny(a.Key, " \t\r\n") {
		return Agent{}, fmt.Errorf("the key in %s is not a Chorus API key (it starts with cho_)", a.KeySource)
	}
	if a.Name == "" {
		a.Name = keyPrefix(a.Key)
	}
	if a.Command == "" {
		return Agent{}, errors.New(`command is required: the command a turn runs with sh -c, e.g. "claude -p"`)
	}
	wd := s.Workdir
	if wd == "" {
		wd = "."
	}
	if a.Workdir, err = filepath.Abs(wd); err != nil {
		return Agent{}, fmt.Errorf("workdir: %w", err)
	}
	if fi, err := os.Stat(a.Workdir); err != nil || !fi.IsDir() {
		return Agent{}, fmt.Errorf("workdir: %s is not a directory", a.Workdir)
	}
	a.Kinds = slices.Clone(DefaultKinds)
	if len(s.Kinds) > 0 {
		a.Kinds = nil
		for _, k := range s.Kinds {
			k = strings.TrimSpace(k)
			if !slices.Contains(vocab.EventKinds, k) {
				return Agent{}, fmt.Errorf("kinds: unknown event kind %q; the kinds are %s", k, strings.Join(vocab.EventKinds, ", "))
			}
			if !slices.Contains(a.Kinds, k) {
				a.Kinds = append(a.Kinds, k)
			}
		}
	}
	if a.MaxConcurrent == 0 {
		a.MaxConcurrent = DefaultMaxConcurrent
	}
	if a.MaxConcurrent < 0 {
		return Agent{}, fmt.Errorf("maxConcurrent: %d is below 1; give the number of turns that may run at once", s.MaxConcurrent)
	}
	if s.TurnTimeout != "" {
		d, err := time.ParseDuration(s.TurnTimeout)
		if err != nil || d <= 0 {
			return Agent{}, fmt.Errorf("turnTimeout: %q is not a positive duration (e.g. 30m, 1h)", s.TurnTimeout)
		}
		a.TurnTimeout = d
	}
	a.StateDir = s.StateDir
	if a.StateDir == "" {
		a.StateDir = filepath.Join(a.Workdir, ".chorus", "runner", safeName(a.Name))
	}
	if a.StateDir, err = filepath.Abs(a.StateDir); err != nil {
		return Agent{}, fmt.Errorf("stateDir: %w", err)
	}
	return a, nil
}

// Origin is the server's origin (scheme://host[:port]) from a URL given as the origin or as any
// URL on it (CHORUS_URL is usually the MCP endpoint, .../api/mcp); "" is DefaultURL.
func Origin(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return DefaultURL, nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("url: %q is not an http(s) URL of a Chorus server (e.g. %s)", raw, DefaultURL)
	}
	return u.Scheme + "://" + u.Host, nil
}

// keyPrefix is the part of a key that may be shown: "cho_" and 8 characters (as `chorus key list`).
func keyPrefix(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// safeName keeps a name usable as one path element.
func safeName(name string) string {
	if name == "." || name == ".." {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, name)
}
