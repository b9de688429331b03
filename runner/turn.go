package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// turn is one run of the agent's command for the events of one group.
type turn struct {
	id, group string
	events    []Event
}

// turnResult is how a turn ended: its outcome and exit status (-1 when it has none).
type turnResult struct {
	outcome  string
	exitCode int
}

// playbookTimeout bounds fetching a turn's playbooks: a server that does not answer leaves the
// prompt naming the playbook instead.
const playbookTimeout = 30 * time.Second

// TurnsDir holds each turn's prompt (<turn>.prompt) and log (<turn>.log) in the state directory.
const TurnsDir = "turns"

// idea is the idea a turn serves ("" when its events name none).
func (t *turn) idea() string {
	for _, e := range t.events {
		if e.IdeaUUID != "" {
			return e.IdeaUUID
		}
	}
	return ""
}

// env is what a turn's command finds in its environment beside the runner's own: how to reach
// Chorus as the agent, the prompt, and the events.
func (r *agentRunner) env(t *turn, promptFile string) []string {
	var ids, kinds, entities []string
	for _, e := range t.events {
		if e.Kind == GapKind {
			kinds = append(kinds, GapKind)
			continue
		}
		ids, kinds = append(ids, e.ID), append(kinds, e.Kind)
		if e.EntityUUID != "" && !slices.Contains(entities, e.EntityUUID) {
			entities = append(entities, e.EntityUUID)
		}
	}
	return []string{
		"CHORUS_URL=" + r.a.URL + "/api/mcp",
		"CHORUS_API_KEY=" + r.a.Key,
		"CHORUS_PROMPT_FILE=" + promptFile,
		"CHORUS_EVENT_IDS=" + strings.Join(ids, ","),
		"CHORUS_EVENT_KINDS=" + strings.Join(kinds, ","),
		"CHORUS_IDEA_UUID=" + t.idea(),
		"CHORUS_ENTITY_UUIDS=" + strings.Join(entities, ","),
		"CHORUS_TURN_ID=" + t.id,
		"CHORUS_AGENT_NAME=" + r.a.Name,
	}
}

// withoutKeys is environ without the variables that hold a Chorus API key: one of keys (the
// runner read its agents' keys from some of them, e.g. DEV_KEY and PM_KEY) or any other value
// shaped like one (an ADMIN_KEY exported in the runner's shell). A turn gets its own agent's key
// as CHORUS_API_KEY only, never another's.
func withoutKeys(environ, keys []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		_, v, _ := strings.Cut(kv, "=")
		if v = strings.TrimSpace(v); !slices.Contains(keys, v) && !strings.HasPrefix(v, "cho_") {
			out = append(out, kv)
		}
	}
	return out
}

// execute runs a turn: the prompt written to <state>/turns/<id>.prompt and given on standard
// input, the command run by sh -c in the workdir in a process group of its own, its output and
// exit in <state>/turns/<id>.log. The whole group is killed when the turn times out or the
// runner's grace period ends.
func (r *agentRunner) execute(t *turn) turnResult {
	started := time.Now()
	ctx, cancel := context.WithTimeout(r.killCtx, playbookTimeout)
	prompt, errs := buildPrompt(ctx, r.a, t.group, t.events, r.pb)
	cancel()
	for _, err := range errs {
		r.log.Warn("a playbook could not be fetched; the prompt names it instead", "turn", t.id, "error", err)
	}
	dir := filepath.Join(r.a.StateDir, TurnsDir)
	promptFile := filepath.Join(dir, t.id+".prompt")
	env := r.env(t, promptFile)
	if r.o.DryRun {
		r.printPlan(t, env, prompt)
		r.logOutcome(t, turnResult{outcome: OutcomeDryRun, exitCode: -1}, started, "")
		return turnResult{outcome: OutcomeDryRun, exitCode: -1}
	}
	r.log.Info("turn started", "turn", t.id, "group", t.group, "idea", t.idea(), "eventIds", seqList(t.events), "kinds", kindList(t.events))
	logFile := filepath.Join(dir, t.id+".log")
	res := r.spawn(t, env, prompt, promptFile, logFile, started)
	r.logOutcome(t, res, started, logFile)
	return res
}

// spawn runs the command and writes the turn's log.
func (r *agentRunner) spawn(t *turn, env []string, prompt, promptFile, logFile string, started time.Time) turnResult {
	failed := func(err error) turnResult {
		r.log.Error("the turn could not be started", "turn", t.id, "error", err)
		return turnResult{outcome: OutcomeError, exitCode: -1}
	}
	if err := os.MkdirAll(filepath.Dir(promptFile), 0o700); err != nil {
		return failed(err)
	}
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		return failed(err)
	}
	stdin, err := os.Open(promptFile)
	if err != nil {
		return failed(err)
	}
	defer stdin.Close()
	logf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return failed(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "turn:    %s\nagent:   %s\ngroup:   %s\ncommand: %s\nworkdir: %s\nevents:  %s\nprompt:  %s\nstarted: %s\n--- output (stdout and stderr) ---\n",
		t.id, r.a.Name, t.group, r.a.Command, r.a.Workdir, eventList(t.events), promptFile, started.UTC().Format(time.RFC3339))

	ctx, cancel := context.WithTimeout(r.killCtx, r.a.TurnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", r.a.Command)
	cmd.Dir = r.a.Workdir
	cmd.Env = append(withoutKeys(os.Environ(), r.keys), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, logf, logf
	cmd.WaitDelay = 5 * time.Second
	inOwnGroup(cmd)
	err = cmd.Run()

	res := turnResult{outcome: OutcomeOK, exitCode: -1}
	if cmd.ProcessState != nil {
		res.exitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	switch {
	case r.killCtx.Err() != nil:
		res.outcome = OutcomeInterrupted
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.outcome = OutcomeTimeout
	case err == nil:
	case errors.As(err, &exitErr):
		res.outcome = OutcomeFailed
	default:
		fmt.Fprintf(logf, "chorus agent run: %v\n", err)
		res.outcome = OutcomeError
	}
	fmt.Fprintf(logf, "--- end ---\noutcome: %s\nexit:    %d\nduration: %s\n", res.outcome, res.exitCode, time.Since(started).Round(time.Millisecond))
	return res
}

// logOutcome writes the one line that tells how a turn ended.
func (r *agentRunner) logOutcome(t *turn, res turnResult, started time.Time, logFile string) {
	level := r.log.Info
	if res.outcome != OutcomeOK && res.outcome != OutcomeDryRun {
		level = r.log.Warn
	}
	level("turn finished", "turn", t.id, "group", t.group, "idea", t.idea(), "eventIds", seqList(t.events),
		"kinds", kindList(t.events), "outcome", res.outcome, "exitCode", res.exitCode,
		"duration", time.Since(started).Round(time.Millisecond), "log", logFile)
}

// printPlan prints what a dry run would run.
func (r *agentRunner) printPlan(t *turn, env []string, prompt string) {
	var b strings.Builder
	fmt.Fprintf(&b, "=== turn %s of agent %s (dry run: nothing is run) ===\n", t.id, r.a.Name)
	fmt.Fprintf(&b, "command: sh -c %q\nworkdir: %s\nevents:  %s\nenv:\n", r.a.Command, r.a.Workdir, eventList(t.events))
	for _, kv := range env {
		if strings.HasPrefix(kv, "CHORUS_API_KEY=") {
			kv = "CHORUS_API_KEY=" + keyPrefix(r.a.Key) + "... (from " + r.a.KeySource + ")"
		}
		fmt.Fprintf(&b, "  %s\n", kv)
	}
	fmt.Fprintf(&b, "prompt (on standard input and in CHORUS_PROMPT_FILE):\n%s\n", prompt)
	r.out.print(b.String())
}

func kindList(events []Event) string {
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, ",")
}

// eventList names a turn's events: "42 task_assigned, 43 mentioned".
func eventList(events []Event) string {
	var parts []string
	for _, e := range events {
		if e.Kind == GapKind {
			if e.Reason == CatchUpFirstStart {
				parts = append(parts, "catch-up (the runner's first start)")
			} else {
				parts = append(parts, "catch-up (events were lost)")
			}
			continue
		}
		parts = append(parts, e.ID+" "+e.Kind)
	}
	return strings.Join(parts, ", ")
}
