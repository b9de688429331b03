package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/runner"
)

// agentRunOptions are the flags of `chorus agent run`.
type agentRunOptions struct {
	config, url, name, keyEnv, keyFile, command, workdir, stateDir string
	kinds                                                          []string
	maxConcurrent                                                  int
	turnTimeout, grace                                             time.Duration
	dryRun, noCatchUp                                              bool
}

// agentFlags are the flags that describe one agent; a config file describes its agents itself.
var agentFlags = []string{"name", "key-env", "key-file", "command", "workdir", "kinds", "max-concurrent", "turn-timeout", "state-dir", "no-catch-up"}

func newAgentRunCmd() *cobra.Command {
	o := agentRunOptions{}
	cmd := &cobra.Command{
		Use:   "run --command CMD [--key-env NAME | --key-file PATH] [--workdir DIR] | --config runner.json",
		Short: "Run an agent's command whenever an event needs it (a long-running runner; --dry-run prints instead)",
		Long: `Follow one or more agents' event streams (GET /api/events) and, when an event needs the agent
(by default: task_assigned, task_reopened, mentioned, elaboration_answered, proposal_rejected,
gate_refused, gate_applied), run a command with a prompt built from the events and the role's
playbook. The runner calls no tool and never polls: it only listens.

Turns of one idea run one at a time; events that arrive during a turn are coalesced into the next
turn of their idea; at most --max-concurrent turns run at once; a turn that outlives --turn-timeout
is killed with every process it started. The command runs with sh -c in --workdir; it gets the
prompt on standard input and in the file $CHORUS_PROMPT_FILE, and CHORUS_URL (the MCP endpoint),
CHORUS_API_KEY (the agent's key, so chorus mcp call works), CHORUS_EVENT_IDS, CHORUS_EVENT_KINDS,
CHORUS_IDEA_UUID and CHORUS_ENTITY_UUIDS in its environment.

The state directory (default <workdir>/.chorus/runner/<name or key prefix>) holds a journal of turns
(synced JSON lines) and each turn's prompt and log. After a crash or a restart the runner resumes
the stream where every earlier event was handled, runs again a turn cut short, and never runs a
finished turn twice. One runner per state directory (it is locked). On a state directory with no
journal yet, the runner first runs one catch-up turn (CHORUS_EVENT_KINDS=gap; the prompt asks the
agent to re-read its state with chorus_checkin and chorus_get_my_assignments), so work assigned
before the runner started is taken up; --no-catch-up (config: "catchUp": false) turns it off.

The key is never a flag: --key-env names an environment variable (default CHORUS_API_KEY), or
--key-file a file. Several agents: --config runner.json, for example
  {"url": "http://127.0.0.1:8637",
   "agents": [{"name": "dev", "keyEnv": "DEV_KEY", "command": "claude -p", "workdir": "/src/app",
               "maxConcurrent": 2, "turnTimeout": "30m"},
              {"name": "pm", "keyFile": "pm.key", "command": "codex exec -", "workdir": "/src/app",
               "kinds": ["elaboration_answered", "proposal_rejected", "mentioned"]}]}

SIGINT or SIGTERM: stop taking events, wait up to --grace for running turns, kill the rest (they
run again next time), exit 0.

  CHORUS_API_KEY=cho_... chorus agent run --command 'claude -p' --workdir ~/src/app
  chorus agent run --config runner.json --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			agents, err := o.agents(cmd)
			if err != nil {
				return err
			}
			log := newLoggerTo(cmd.ErrOrStderr())
			for _, a := range agents {
				log.Info("agent", "agent", a.Name, "url", a.URL, "command", a.Command, "workdir", a.Workdir, "stateDir", a.StateDir,
					"kinds", strings.Join(a.Kinds, ","), "maxConcurrent", a.MaxConcurrent, "turnTimeout", a.TurnTimeout, "catchUp", !a.NoCatchUp, "dryRun", o.dryRun)
			}
			return runner.Run(cmd.Context(), agents, runner.Options{DryRun: o.dryRun, Out: cmd.OutOrStdout(), Log: log, Grace: o.grace})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "a runner config file (JSON) listing the agents; instead of the agent flags")
	f.StringVar(&o.url, "url", "", "the Chorus server (default: CHORUS_URL's origin, else "+runner.DefaultURL+")")
	f.StringVar(&o.name, "name", "", "a name for the agent in logs and its state directory (default: its key's prefix)")
	f.StringVar(&o.keyEnv, "key-env", "CHORUS_API_KEY", "the environment variable holding the agent's API key")
	f.StringVar(&o.keyFile, "key-file", "", "a file holding the agent's API key (instead of --key-env)")
	f.StringVar(&o.command, "command", "", "the command a turn runs with sh -c, e.g. 'claude -p' (required)")
	f.StringVar(&o.workdir, "workdir", ".", "the directory the command runs in")
	f.StringSliceVar(&o.kinds, "kinds", nil, "the event kinds that start a turn, comma-separated (default "+strings.Join(runner.DefaultKinds, ",")+")")
	f.IntVar(&o.maxConcurrent, "max-concurrent", runner.DefaultMaxConcurrent, "turns that may run at once (each of another idea)")
	f.DurationVar(&o.turnTimeout, "turn-timeout", runner.DefaultTurnTimeout, "a turn running longer is killed, with every process it started")
	f.StringVar(&o.stateDir, "state-dir", "", "the journal, lock and turn logs (default <workdir>/.chorus/runner/<name or key prefix>)")
	f.DurationVar(&o.grace, "grace", runner.DefaultGrace, "on SIGINT/SIGTERM, how long to wait for running turns before killing them")
	f.BoolVar(&o.noCatchUp, "no-catch-up", false, "on a state directory with no journal yet, do not run the first catch-up turn (the agent re-reading its assignments)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print each turn's command, workdir and prompt instead of running it; write nothing")
	return cmd
}

// agents checks the flags (or the config file) and resolves every agent, before anything runs.
func (o agentRunOptions) agents(cmd *cobra.Command) ([]runner.Agent, error) {
	if o.grace <= 0 {
		return nil, errors.New("--grace must be positive, e.g. 30s")
	}
	url := o.url
	if url == "" {
		url = os.Getenv("CHORUS_URL")
	}
	if o.config != "" {
		for _, name := range agentFlags {
			if cmd.Flags().Changed(name) {
				return nil, fmt.Errorf("--%s cannot be used with --config: set it for each agent in the config file", name)
			}
		}
		return runner.LoadConfig(o.config, url, os.Getenv)
	}
	if cmd.Flags().Changed("key-env") && cmd.Flags().Changed("key-file") {
		return nil, errors.New("--key-env and --key-file cannot be used together: give the key one way")
	}
	if o.maxConcurrent < 1 {
		return nil, fmt.Errorf("--max-concurrent: %d is below 1", o.maxConcurrent)
	}
	if o.turnTimeout <= 0 {
		return nil, errors.New("--turn-timeout must be positive, e.g. 30m")
	}
	spec := runner.AgentSpec{Name: o.name, URL: url, KeyEnv: o.keyEnv, KeyFile: o.keyFile, Command: o.command,
		Workdir: o.workdir, Kinds: o.kinds, MaxConcurrent: o.maxConcurrent, TurnTimeout: o.turnTimeout.String(), StateDir: o.stateDir}
	if o.keyFile != "" {
		spec.KeyEnv = ""
	}
	if o.noCatchUp {
		no := false
		spec.CatchUp = &no
	}
	a, err := spec.Resolve(os.Getenv)
	if err != nil {
		return nil, flagError(err)
	}
	return []runner.Agent{a}, nil
}

// flagError renames the config fields an agent error names to the flags that set them.
func flagError(err error) error {
	msg := err.Error()
	for field, flag := range map[string]string{"keyEnv": "--key-env", "keyFile": "--key-file", "command": "--command",
		"workdir": "--workdir", "kinds": "--kinds", "maxConcurrent": "--max-concurrent", "turnTimeout": "--turn-timeout",
		"stateDir": "--state-dir", "url": "--url"} {
		if rest, ok := strings.CutPrefix(msg, field+":"); ok {
			return errors.New(flag + ":" + rest)
		}
		if rest, ok := strings.CutPrefix(msg, field+" "); ok {
			return errors.New(flag + " " + rest)
		}
	}
	if strings.HasPrefix(msg, "no key:") {
		return errors.New("no key: set --key-env (an environment variable holding the agent's API key, default CHORUS_API_KEY) or --key-file")
	}
	return err
}
