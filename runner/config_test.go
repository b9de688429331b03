package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testKey = "cho_runnertestkey0123456789abcdefghijklmnopqrstu"

// A config file is checked whole before anything runs, and each error names the agent and the
// field.
func TestConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pm.key"), []byte(testKey+"\n"), 0o600))
	env := map[string]string{"DEV_KEY": testKey}
	getenv := func(k string) string { return env[k] }
	load := func(body string) ([]Agent, error) {
		path := filepath.Join(dir, "runner.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return LoadConfig(path, "http://10.0.0.1:9000/api/mcp", getenv)
	}

	agents, err := load(`{"agents": [
	  {"name": "dev", "keyEnv": "DEV_KEY", "command": "claude -p", "workdir": ".", "turnTimeout": "10m", "maxConcurrent": 3},
	  {"name": "pm", "url": "https://chorus.example.com/api/mcp", "keyFile": "pm.key", "command": "codex exec -", "kinds": ["mentioned"], "catchUp": false}]}`)
	require.NoError(t, err)
	require.Equal(t, Agent{Name: "dev", URL: "http://10.0.0.1:9000", Key: testKey, KeySource: "environment variable DEV_KEY",
		Command: "claude -p", Workdir: dir, Kinds: DefaultKinds, MaxConcurrent: 3, TurnTimeout: 10 * time.Minute,
		StateDir: filepath.Join(dir, ".chorus", "runner", "dev")}, agents[0])
	require.Equal(t, "https://chorus.example.com", agents[1].URL)
	require.Equal(t, []string{"mentioned"}, agents[1].Kinds)
	require.Equal(t, DefaultMaxConcurrent, agents[1].MaxConcurrent)
	require.Equal(t, DefaultTurnTimeout, agents[1].TurnTimeout)
	require.True(t, agents[1].NoCatchUp, `"catchUp": false turns the first start's catch-up turn off`)

	for body, want := range map[string]string{
		`{"agents": [{"name": "dev", "keyEnv": "NOPE", "command": "x"}]}`:                           "agents[0] (dev): keyEnv: the environment variable NOPE is empty or unset",
		`{"agents": [{"name": "dev", "command": "x"}]}`:                                             "agents[0] (dev): no key: set keyEnv",
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "keyFile": "pm.key", "command": "x"}]}`:   "keyEnv and keyFile are both set",
		`{"agents": [{"name": "dev", "keyFile": "missing.key", "command": "x"}]}`:                   "agents[0] (dev): keyFile: open " + filepath.Join(dir, "missing.key"),
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY"}]}`:                                        "agents[0] (dev): command is required",
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "workdir": "nowhere"}]}`:  "workdir: " + filepath.Join(dir, "nowhere") + " is not a directory",
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "kinds": ["assigned"]}]}`: `kinds: unknown event kind "assigned"; the kinds are task_assigned,`,
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "maxConcurrent": -1}]}`:   "maxConcurrent: -1 is below 1",
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "turnTimeout": "soon"}]}`: `turnTimeout: "soon" is not a positive duration`,
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "url": "ftp://x"}]}`:      `url: "ftp://x" is not an http(s) URL`,
		`{"agents": [{"keyEnv": "DEV_KEY", "command": "x"}]}`:                                       "agents[0].name is required",
		`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x", "timeout": "1m"}]}`:       `unknown field "timeout"`,
		`{"agents": []}`: "agents is empty",
		`{"agents": [{"name": "a", "keyEnv": "DEV_KEY", "command": "x"}, {"name": "a", "keyEnv": "DEV_KEY", "command": "x"}]}`:                                   "two agents are named \"a\"",
		`{"agents": [{"name": "a", "keyEnv": "DEV_KEY", "command": "x", "stateDir": "s"}, {"name": "b", "keyEnv": "DEV_KEY", "command": "x", "stateDir": "s"}]}`: `agents "a" and "b" share the state directory`,
	} {
		_, err := load(body)
		require.ErrorContains(t, err, want, body)
	}
	env["DEV_KEY"] = "sk-not-chorus"
	_, err = load(`{"agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "x"}]}`)
	require.ErrorContains(t, err, "the key in environment variable DEV_KEY is not a Chorus API key")
	require.NotContains(t, err.Error(), "sk-not-chorus", "an error never shows the key")
}
