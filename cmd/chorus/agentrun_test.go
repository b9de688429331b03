//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store/storetest"
)

// fakeAgent is the command the runner runs in TestAgentRunTakesAssignedTasksToVerify: a
// developer that never polls. For each task its turn names it moves the task to in_progress,
// self-checks its criterion and submits it, with `chorus mcp call` (CHORUS_URL and
// CHORUS_API_KEY come from the runner); a turn that names no task (the runner's catch-up turn)
// reads its assignments once and does the same to each task still only assigned. It stamps each
// turn's start and end (turn, event ids, process group) in $STAMPS and, while $HOLD exists,
// waits before doing anything.
const fakeAgent = `set -e
pgid=$(awk '{print $5}' /proc/$$/stat)
echo "start $CHORUS_TURN_ID ${CHORUS_IDEA_UUID:--} ${CHORUS_EVENT_IDS:--} $pgid" >> "$STAMPS"
while [ -e "$HOLD" ]; do sleep 0.05; done
tasks=$(echo "$CHORUS_ENTITY_UUIDS" | tr ',' ' ')
if [ -z "$tasks" ]; then
  # keys come sorted: a task's status before its uuid
  tasks=$(chorus mcp call chorus_get_my_assignments --field taskTracker | awk -F'"' '/"status":/ {st=$4} /"uuid":/ {if (st == "assigned") print $4}')
fi
for task in $tasks; do
  chorus mcp call chorus_report_work taskUuid=$task report="starting" status=in_progress > /dev/null
  crit=$(chorus mcp call chorus_get_task taskUuid=$task --field acceptanceCriteriaItems.0.uuid)
  chorus mcp call chorus_report_criteria_self_check "{\"taskUuid\":\"$task\",\"criteria\":[{\"uuid\":\"$crit\",\"devStatus\":\"passed\",\"devEvidence\":\"fake agent\"}]}" > /dev/null
  chorus mcp call chorus_submit_for_verify taskUuid=$task > /dev/null
done
echo "end $CHORUS_TURN_ID ${CHORUS_IDEA_UUID:--} ${CHORUS_EVENT_IDS:--} $pgid" >> "$STAMPS"
`

// Issue 23: `chorus agent run` with a fake agent command (a script driving `chorus mcp call`)
// takes a task assigned before it started to to_verify in its first start's catch-up turn, then
// two tasks assigned while it runs with no polling, runs the idea's turns one at a time, and,
// killed (SIGKILL) during a turn and started again, runs that turn again and no finished turn
// (nor the catch-up) twice; on SQLite and PostgreSQL.
func TestAgentRunTakesAssignedTasksToVerify(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a whole chorus dev stack; skipped under -short")
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			dsn := filepath.Join(dataDir, "chorus.db")
			if dialect == "pg" {
				dsn = storetest.NewDSN(t, "pg")
			}
			t.Setenv("CHORUS_DATABASE_URL", dsn)
			t.Setenv("TEMPORAL_ADDRESS", "")
			t.Setenv("CHORUS_BOOTSTRAP_ADMIN_KEY", "")
			t.Setenv("CHORUS_LOG_LEVEL", "error")
			stack := startMetricsStack(t, dataDir)
			ctx := context.Background()
			admin, err := connectAgent(ctx, stack.url, stack.adminKey)
			require.NoError(t, err)
			defer admin.Close()

			// One idea, approved into three tasks; a developer agent.
			tasks := approvedTasks(t, admin, 4)
			devKey := createAgent(t, dataDir, "runner-dev", []string{"developer_agent"}, nil).Key
			dev, err := connectAgent(ctx, stack.url, devKey)
			require.NoError(t, err)
			var checkin struct{ Agent struct{ UUID string } }
			require.NoError(t, dev.Call(ctx, "chorus_checkin", nil, &checkin))
			dev.Close()

			dir := t.TempDir()
			e := newRunnerEnv(t, dir, stack.url, devKey)
			assign := func(task string) {
				t.Helper()
				require.NoError(t, admin.Call(ctx, "chorus_pm_assign_task", map[string]any{"taskUuid": task, "agentUuid": checkin.Agent.UUID}, nil))
			}
			status := func(task string) string {
				var v struct{ Status string }
				require.NoError(t, admin.Call(ctx, "chorus_get_task", map[string]any{"taskUuid": task}, &v))
				return v.Status
			}
			waitStatus := func(r *runnerProc, want string, tasks ...string) {
				t.Helper()
				require.Eventually(t, func() bool {
					for _, task := range tasks {
						if status(task) != want {
							return false
						}
					}
					return true
				}, 2*time.Minute, 100*time.Millisecond, "tasks did not reach %s; runner:\n%s\nstamps:\n%s", want, r.log, e.stamps())
			}

			// One assignment before the runner starts: its event is older than the stream's
			// start, so the first start's catch-up turn takes the task to to_verify.
			assign(tasks[0])
			r1 := e.start(t, "following the event stream from its newest event")
			waitStatus(r1, "to_verify", tasks[0])
			require.Eventually(t, func() bool { return strings.Contains(e.stamps(), "end 000001 ") }, time.Minute,
				20*time.Millisecond, "the catch-up turn did not end; stamps:\n%s", e.stamps())

			// Two assignments: the tasks reach to_verify, turns of the idea one at a time.
			assign(tasks[1])
			assign(tasks[2])
			waitStatus(r1, "to_verify", tasks[1], tasks[2])

			// A fourth: the runner is killed during its turn, with the turn's processes (as a
			// machine that goes down), and started again.
			require.NoError(t, os.WriteFile(e.hold, nil, 0o600))
			assign(tasks[3])
			held := e.waitStart(t, r1)
			r1.kill(t)
			require.NoError(t, syscall.Kill(-held.pgid, syscall.SIGKILL))
			require.NoError(t, os.Remove(e.hold))
			r2 := e.start(t, "following the event stream")
			waitStatus(r2, "to_verify", tasks[3])
			require.Eventually(t, func() bool { return strings.Contains(r2.log.String(), `msg="turn finished"`) },
				time.Minute, 50*time.Millisecond)
			r2.stop(t)

			// From the stamps: no two turns of the idea overlapped; the catch-up turn (no event
			// id: "-") ran first and once; every event's turn finished once; the killed turn ran
			// again, and no other.
			stamps := e.readStamps(t)
			running := ""
			started, finished := map[string]int{}, map[string]int{}
			for _, s := range stamps {
				switch s.what {
				case "start":
					if s.pgid != held.pgid {
						require.Empty(t, running, "turn %s started while turn %s ran: %v", s.turn, running, stamps)
					}
					running = s.turn
					for _, id := range s.ids {
						started[id]++
					}
				case "end":
					running = ""
					for _, id := range s.ids {
						finished[id]++
					}
				}
				if s.pgid == held.pgid {
					running = "" // the killed turn: it never ends
				}
			}
			require.Equal(t, turnStamp{what: "start", turn: "000001", idea: "-", ids: []string{"-"}, pgid: stamps[0].pgid}, stamps[0],
				"the catch-up turn comes first")
			require.Len(t, finished, 4, "the catch-up and one event per assignment made after the start: %v", stamps)
			for id, n := range finished {
				require.Equal(t, 1, n, "event %s was finished %d times: %v", id, n, stamps)
				want := 1
				if slicesContains(held.ids, id) {
					want = 2
				}
				require.Equal(t, want, started[id], "event %s started %d times: %v", id, started[id], stamps)
			}
			require.Contains(t, r2.log.String(), "resuming turns the runner stopped during")
			turns := filepath.Join(e.work, ".chorus", "runner", "dev", "turns")
			prompt, err := os.ReadFile(filepath.Join(turns, "000001.prompt"))
			require.NoError(t, err)
			require.Contains(t, string(prompt), "Catch up: the runner has just started for you for the first time")
			prompt, err = os.ReadFile(filepath.Join(turns, "000002.prompt"))
			require.NoError(t, err)
			require.Contains(t, string(prompt), "task_assigned on task "+tasks[1])
			require.Contains(t, string(prompt), "Playbook task-to-submission taskUuid="+tasks[1]+":\nTake a task from claim to submission",
				"the playbook was fetched with prompts/get")
		})
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// approvedTasks runs an idea through a proposal with n independent tasks, approved, and returns
// the tasks' uuids.
func approvedTasks(t *testing.T, admin *mcpclient.Agent, n int) []string {
	t.Helper()
	ctx := context.Background()
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		var out map[string]any
		require.NoError(t, admin.Call(ctx, tool, args, &out), tool)
		return out
	}
	project := call("chorus_admin_create_project", map[string]any{"name": "Runner"})["uuid"].(string)
	idea := call("chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "Dark mode", "content": "Let users pick a dark theme"})["uuid"].(string)
	call("chorus_claim_idea", map[string]any{"ideaUuid": idea})
	call("chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": "clear enough"})
	pr := call("chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Dark mode v1",
		"description": "Ship a dark theme", "inputType": "idea", "inputUuids": []string{idea}})["uuid"].(string)
	call("chorus_pm_add_document_draft", map[string]any{"proposalUuid": pr, "type": "prd", "title": "Dark mode PRD",
		"content": "This document explains the feature, the users it serves, and what success looks like, in enough words to pass validation."})
	for i := range n {
		call("chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": fmt.Sprintf("Part %d", i+1),
			"acceptanceCriteriaItems": []map[string]any{{"description": "it works"}}})
	}
	call("chorus_pm_submit_proposal", map[string]any{"proposalUuid": pr})
	approved := call("chorus_admin_approve_proposal", map[string]any{"proposalUuid": pr})
	var tasks []string
	for _, m := range approved["materializedTasks"].([]any) {
		tasks = append(tasks, m.(map[string]any)["taskUuid"].(string))
	}
	require.Len(t, tasks, n)
	return tasks
}

// runnerEnv is where the end-to-end runner runs: a `chorus` on PATH (this test binary as main),
// the fake agent script, its stamps, and the runner's workdir (its state under .chorus/runner).
type runnerEnv struct {
	dir, bin, work, stampsFile, hold, url, key string
}

func newRunnerEnv(t *testing.T, dir, mcpURL, key string) *runnerEnv {
	self, err := os.Executable()
	require.NoError(t, err)
	e := &runnerEnv{dir: dir, bin: filepath.Join(dir, "bin"), work: filepath.Join(dir, "work"),
		stampsFile: filepath.Join(dir, "stamps"), hold: filepath.Join(dir, "hold"), url: mcpURL, key: key}
	require.NoError(t, os.MkdirAll(e.bin, 0o700))
	require.NoError(t, os.MkdirAll(e.work, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(e.bin, "chorus"),
		[]byte(fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runMainEnv, self)), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(fakeAgent), 0o600))
	return e
}

// runnerProc is a running `chorus agent run`.
type runnerProc struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

// start runs `chorus agent run` for the developer and waits until its log says ready.
func (e *runnerEnv) start(t *testing.T, ready string) *runnerProc {
	t.Helper()
	r := &runnerProc{log: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(filepath.Join(e.bin, "chorus"), "agent", "run", "--name", "dev", "--workdir", e.work,
		"--key-env", "DEV_KEY", "--command", fmt.Sprintf("STAMPS=%s HOLD=%s sh %s", e.stampsFile, e.hold, filepath.Join(e.dir, "agent.sh")))
	r.cmd.Env = append(os.Environ(), "PATH="+e.bin+":"+os.Getenv("PATH"), "CHORUS_URL="+e.url, "DEV_KEY="+e.key,
		"CHORUS_API_KEY=", "CHORUS_LOG_LEVEL=info")
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	require.NoError(t, r.cmd.Start())
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(r.log.String(), ready) }, time.Minute, 20*time.Millisecond,
		"the runner did not get ready; it wrote:\n%s", r.log)
	return r
}

// kill ends the runner with SIGKILL, as a crash.
func (r *runnerProc) kill(t *testing.T) {
	require.NoError(t, r.cmd.Process.Kill())
	<-r.done
}

// stop ends the runner with SIGTERM: it exits 0.
func (r *runnerProc) stop(t *testing.T) {
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-r.done:
		require.NoError(t, err, "the runner's exit after SIGTERM; it wrote:\n%s", r.log)
	case <-time.After(time.Minute):
		t.Fatalf("the runner did not stop on SIGTERM; it wrote:\n%s", r.log)
	}
}

// turnStamp is a line of the fake agent's stamps.
type turnStamp struct {
	what, turn, idea string
	ids              []string
	pgid             int
}

func (e *runnerEnv) stamps() string {
	b, _ := os.ReadFile(e.stampsFile)
	return string(b)
}

func (e *runnerEnv) readStamps(t *testing.T) []turnStamp {
	var out []turnStamp
	sc := bufio.NewScanner(bytes.NewReader([]byte(e.stamps())))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.Len(t, f, 5, sc.Text())
		pgid, err := strconv.Atoi(f[4])
		require.NoError(t, err)
		out = append(out, turnStamp{what: f[0], turn: f[1], idea: f[2], ids: strings.Split(f[3], ","), pgid: pgid})
	}
	return out
}

// waitStart waits for a turn that started and has not ended, and returns its stamp.
func (e *runnerEnv) waitStart(t *testing.T, r *runnerProc) turnStamp {
	t.Helper()
	var held turnStamp
	require.Eventually(t, func() bool {
		open := map[string]turnStamp{}
		for _, s := range e.readStamps(t) {
			if s.what == "start" {
				open[s.turn] = s
			} else {
				delete(open, s.turn)
			}
		}
		for _, s := range open {
			held = s
			return true
		}
		return false
	}, time.Minute, 20*time.Millisecond, "no turn started; runner:\n%s", r.log)
	return held
}

// chorus agent run checks its flags before it connects anywhere, and names the flag to fix.
func TestAgentRunChecksItsFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CHORUS_API_KEY", "")
	t.Setenv("RUNNER_TEST_KEY", "cho_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG")
	run := func(args ...string) error {
		cmd := newRootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"agent", "run"}, args...))
		return cmd.ExecuteContext(context.Background())
	}
	for want, args := range map[string][]string{
		"--key-env: the environment variable CHORUS_API_KEY is empty or unset": {"--command", "x"},
		"--command is required": {"--key-env", "RUNNER_TEST_KEY"},
		"--workdir: " + filepath.Join(dir, "nope") + " is not a directory": {"--key-env", "RUNNER_TEST_KEY", "--command", "x", "--workdir", filepath.Join(dir, "nope")},
		`--kinds: unknown event kind "assigned"`:                           {"--key-env", "RUNNER_TEST_KEY", "--command", "x", "--kinds", "assigned"},
		"--key-env and --key-file cannot be used together":                 {"--key-env", "RUNNER_TEST_KEY", "--key-file", "k", "--command", "x"},
		"--max-concurrent: 0 is below 1":                                   {"--key-env", "RUNNER_TEST_KEY", "--command", "x", "--max-concurrent", "0"},
		"--command cannot be used with --config":                           {"--config", "runner.json", "--command", "x"},
		`--url: "localhost:8637" is not an http(s) URL`:                    {"--key-env", "RUNNER_TEST_KEY", "--command", "x", "--url", "localhost:8637"},
		"--config: open " + filepath.Join(dir, "missing.json"):             {"--config", filepath.Join(dir, "missing.json")},
	} {
		require.ErrorContains(t, run(args...), want, args)
	}
}
