//go:build unix

package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitConnected waits until the fake has had n connections.
func waitConnected(t *testing.T, f *fakeEvents, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(f.connections()) >= n }, time.Minute, 10*time.Millisecond)
}

// Events of one idea that arrive while its turn runs are coalesced into one next turn; the
// turn gets the prompt on standard input and the events in its environment.
func TestEventsDuringATurnMakeOneNextTurn(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.start()
	waitConnected(t, f, 1)
	require.Equal(t, []string{"-"}, f.connections(), "a fresh runner starts from the newest event")
	require.ElementsMatch(t, DefaultKinds, f.kinds, "the stream is asked for the kinds that need the agent")

	f.publish("task_assigned", "task", "t-1", "idea-a")
	h.waitStamp("start", "000001")
	f.publish("mentioned", "task", "t-1", "idea-a")
	f.publish("task_reopened", "task", "t-2", "idea-a")
	h.waitTaken(3)
	require.Len(t, h.started(), 1, "no second turn of the idea while the first runs")

	h.release("000001")
	h.waitStamp("start", "000002")
	h.release("000002")
	h.waitStamp("end", "000002")
	require.NoError(t, h.stop())

	st := h.readStamps()
	require.Equal(t, []stamp{
		{"start", "000001", "idea-a", "1", "task_assigned"}, {"end", "000001", "idea-a", "", ""},
		{"start", "000002", "idea-a", "2,3", "mentioned,task_reopened"}, {"end", "000002", "idea-a", "", ""},
	}, st)
	prompt, err := os.ReadFile(filepath.Join(h.dir, "prompt-000002"))
	require.NoError(t, err)
	require.Contains(t, string(prompt), "event 2: mentioned on task t-1 (idea idea-a) in project p-1")
	require.Contains(t, string(prompt), "event 3: task_reopened on task t-2")
	require.Contains(t, string(prompt), "PLAYBOOK task-to-submission taskUuid=t-1")
	require.Contains(t, string(prompt), "PLAYBOOK task-to-submission taskUuid=t-2")

	// The journal: each turn started and finished, ok; the turn's log holds its output and exit.
	var kinds []string
	for _, r := range h.journal() {
		kinds = append(kinds, r.Type+" "+r.Turn+" "+r.Outcome)
	}
	require.Equal(t, []string{"turn_started 000001 ", "turn_finished 000001 ok", "turn_started 000002 ",
		"turn_finished 000002 ok"}, kinds)
	log, err := os.ReadFile(filepath.Join(h.agent.StateDir, TurnsDir, "000002.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "events:  2 mentioned, 3 task_reopened")
	require.Contains(t, string(log), "outcome: ok\nexit:    0")
	require.Contains(t, h.logs.String(), `msg="turn finished" agent=dev turn=000002 group=idea-a idea=idea-a eventIds=2,3`)
}

// Two events of one idea never run at once; other ideas run beside it up to the cap, and the
// idea's next turn waits its turn.
func TestTurnsOfOneIdeaNeverOverlapAndIdeasShareTheCap(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.start()
	waitConnected(t, f, 1)

	f.publish("task_assigned", "task", "a-1", "idea-a") // 1
	f.publish("task_assigned", "task", "b-1", "idea-b") // 2
	h.waitStamp("start", "000001")
	h.waitStamp("start", "000002")
	f.publish("task_assigned", "task", "c-1", "idea-c") // 3: waits for a slot
	f.publish("task_assigned", "task", "a-2", "idea-a") // 4: waits for idea a
	h.waitTaken(4)
	require.Len(t, h.started(), 2, "the cap is two turns")

	h.release("000001") // idea a ends: the slot goes to idea c, which waited first
	h.waitStamp("start", "000003")
	require.Equal(t, "3", h.started()[2].Events[0].ID)
	require.Len(t, h.started(), 3)
	h.release("000002")
	h.waitStamp("start", "000004")
	require.Equal(t, "4", h.started()[3].Events[0].ID)
	h.release("all")
	h.waitStamp("end", "000004")
	require.NoError(t, h.stop())

	// From the stamps: never two turns of one idea at once, never more than two turns.
	running := map[string]string{}
	ideaOf := map[string]string{}
	for _, s := range h.readStamps() {
		switch s.what {
		case "start":
			for turn, idea := range running {
				require.NotEqual(t, s.idea, idea, "turn %s of %s started while turn %s ran", s.turn, s.idea, turn)
			}
			running[s.turn], ideaOf[s.turn] = s.idea, s.idea
			require.LessOrEqual(t, len(running), 2)
		case "end":
			delete(running, s.turn)
		}
	}
	require.Len(t, ideaOf, 4)
}

// A turn that outlives its timeout is killed with everything it started.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	pidFile := filepath.Join(h.dir, "child.pid")
	h.agent.Command = fmt.Sprintf("sleep 600 & echo $! > %s; wait", pidFile)
	h.agent.TurnTimeout = 300 * time.Millisecond
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "t-1", "idea-a")
	require.Eventually(t, func() bool {
		j := h.journal()
		return len(j) == 2 && j[1].Outcome == OutcomeTimeout
	}, time.Minute, 10*time.Millisecond, "the turn did not time out: %s", h.logs)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gone(pid) }, time.Minute, 10*time.Millisecond,
		"the turn's background child %d outlived the turn", pid)
	require.NoError(t, h.stop())
	require.Contains(t, h.logs.String(), "outcome=timeout")
}

// gone says a process has ended (reaped, or a zombie waiting for a parent that is gone).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// After a crash, the runner resumes the stream where every earlier event was finished, skips
// the replayed events of finished turns, and runs again the turn that never finished.
func TestResumeSkipsFinishedTurnsAndRerunsAnUnfinishedOne(t *testing.T) {
	f, url := newFakeEvents(t)
	e1 := f.publish("task_assigned", "task", "a-1", "idea-a")
	e2 := f.publish("task_assigned", "task", "b-1", "idea-b")
	h := newHarness(t, url)
	// The journal a runner killed during turn 1 leaves: turns 1 (event 1) and 2 (event 2)
	// started, only turn 2 finished; the cursor cannot pass event 1.
	require.NoError(t, os.MkdirAll(h.agent.StateDir, 0o700))
	zero := int64(0)
	var lines []string
	for _, r := range []Record{
		{Type: turnStarted, Turn: "000001", Group: "idea-a", Events: []Event{e1}, Cursor: &zero},
		{Type: turnStarted, Turn: "000002", Group: "idea-b", Events: []Event{e2}, Cursor: &zero},
		{Type: turnFinished, Turn: "000002", Outcome: OutcomeOK, Cursor: &zero},
	} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	// A last line cut short by the crash.
	require.NoError(t, os.WriteFile(filepath.Join(h.agent.StateDir, JournalFile), []byte(strings.Join(lines, "\n")+"\n{\"type\":\"tu"), 0o600))
	f.publish("task_assigned", "task", "c-1", "idea-c") // 3, while the runner was down

	h.release("all")
	h.start()
	waitConnected(t, f, 1)
	h.waitTaken(3)
	h.waitStamp("end", "000004")
	require.NoError(t, h.stop())

	require.Equal(t, []string{"0"}, f.connections(), "resumed after the last position every event below was finished")
	var ran []string
	for _, s := range h.readStamps() {
		if s.what == "start" {
			ran = append(ran, s.turn+":"+s.ids)
		}
	}
	require.ElementsMatch(t, []string{"000003:1", "000004:3"}, ran, "event 1 again (unfinished), event 2 never (finished), event 3")
	j := h.journal()
	require.Equal(t, int64(3), *j[len(j)-1].Cursor, "every event up to 3 is finished now")

	// And once more: nothing runs again.
	h.start()
	waitConnected(t, f, 2)
	require.NoError(t, h.stop())
	require.Equal(t, []string{"0", "3"}, f.connections())
	require.Len(t, h.readStamps(), 4)
}

// When the server drops the connection, the runner reconnects with the last id it read, and
// misses nothing and runs nothing twice.
func TestReconnectsWithLastEventID(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.release("all")
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "a-1", "idea-a")
	f.publish("comment_added", "task", "a-1", "idea-a") // not a default kind: the server does not send it
	f.publish("task_assigned", "task", "b-1", "idea-b")
	h.waitTaken(2)
	f.dropAll()
	waitConnected(t, f, 2)
	f.publish("mentioned", "task", "c-1", "idea-c")
	h.waitTaken(3)
	require.Eventually(t, func() bool { return len(h.readStamps()) == 6 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())
	require.Equal(t, []string{"-", "3"}, f.connections())
	var ids []string
	for _, s := range h.readStamps() {
		if s.what == "start" {
			ids = append(ids, s.ids)
		}
	}
	require.ElementsMatch(t, []string{"1", "3", "4"}, ids)
}

// A gap (the events after the runner's position were pruned) runs one catch-up turn, and the
// events after it as usual.
func TestGapRunsACatchUpTurn(t *testing.T) {
	f, url := newFakeEvents(t)
	for range 5 {
		f.publish("task_assigned", "task", "old", "idea-old")
	}
	f.oldest = 4
	h := newHarness(t, url)
	require.NoError(t, os.MkdirAll(h.agent.StateDir, 0o700))
	two := int64(2)
	b, _ := json.Marshal(Record{Type: turnFinished, Turn: "000007", Outcome: OutcomeOK, Cursor: &two})
	require.NoError(t, os.WriteFile(filepath.Join(h.agent.StateDir, JournalFile), append(b, '\n'), 0o600))
	h.release("all")
	h.start()
	waitConnected(t, f, 1)
	h.waitTaken(3) // the gap, 4 and 5
	require.Eventually(t, func() bool {
		ends := 0
		for _, s := range h.readStamps() {
			if s.what == "end" {
				ends++
			}
		}
		j := h.journal()
		return ends == len(h.started()) && *j[len(j)-1].Cursor == 5
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())
	require.Equal(t, []string{"2"}, f.connections())
	st := h.readStamps()
	require.Contains(t, st, stamp{"start", "000008", "", "", "gap"})
	var ids []string
	for _, s := range st {
		if s.what == "start" && s.ids != "" {
			ids = append(ids, strings.Split(s.ids, ",")...)
		}
	}
	require.Equal(t, []string{"4", "5"}, ids, "the events after the gap run as usual")
	prompt, err := os.ReadFile(filepath.Join(h.dir, "prompt-000008"))
	require.NoError(t, err)
	require.Contains(t, string(prompt), "Catch up: events for you may have been missed")
	require.Contains(t, string(prompt), "chorus_get_notifications")
}

// A dry run prints each turn's command, workdir and prompt, and runs and writes nothing.
func TestDryRunRunsNothing(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	marker := filepath.Join(h.dir, "ran")
	h.agent.Command = "touch " + marker
	var out syncBuf
	h.opts.DryRun, h.opts.Out = true, &out
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "t-1", "idea-a")
	f.publish("proposal_rejected", "proposal", "pr-1", "idea-b")
	h.waitTaken(2)
	require.Eventually(t, func() bool { return strings.Count(out.String(), "=== turn") == 2 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())
	plan := out.String()
	require.Contains(t, plan, "=== turn 000001 of agent dev (dry run: nothing is run) ===\ncommand: sh -c \"touch "+marker+"\"\nworkdir: "+h.agent.Workdir)
	require.Contains(t, plan, "CHORUS_EVENT_IDS=2")
	require.Contains(t, plan, "CHORUS_API_KEY=cho_runnerte... (from environment variable K)")
	require.NotContains(t, plan, testKey)
	require.Contains(t, plan, "PLAYBOOK idea-to-proposal ideaUuid=idea-b")
	require.Contains(t, plan, "your proposal was rejected")
	require.NoFileExists(t, marker)
	require.NoDirExists(t, h.agent.StateDir, "a dry run writes no state")
}

// Two runners cannot share an agent's state directory.
func TestStateDirIsLocked(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.start()
	waitConnected(t, f, 1)
	err := Run(t.Context(), []Agent{h.agent}, h.opts)
	require.ErrorContains(t, err, "another chorus agent run is using the state directory "+h.agent.StateDir)
	require.NoError(t, h.stop())
}

// A refused key ends the run with the server's message.
func TestRefusedKeyEndsTheRun(t *testing.T) {
	_, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.agent.Key = "cho_someotherkey"
	err := Run(t.Context(), []Agent{h.agent}, h.opts)
	require.ErrorContains(t, err, "agent dev: "+url+"/api/events refused the key (401): Invalid API key")
}

// On SIGINT or SIGTERM (ctx's end) a turn still running when the grace period ends is killed,
// is not journaled as finished, and runs again when the runner starts again.
func TestStopKillsTurnsAfterTheGraceAndTheyRunAgain(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.opts.Grace = 50 * time.Millisecond
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "t-1", "idea-a")
	h.waitStamp("start", "000001")
	require.NoError(t, h.stop(), "a stop is no error")
	require.Contains(t, h.logs.String(), "outcome=interrupted")
	require.Len(t, h.journal(), 1, "only the start: the turn did not finish")

	h.release("all")
	h.start()
	waitConnected(t, f, 2)
	h.waitStamp("end", "000002")
	require.NoError(t, h.stop())
	require.Equal(t, "1", h.started()[1].Events[0].ID, "the interrupted turn's event runs again")
	require.Equal(t, []string{"-", "0"}, f.connections())
}

// Compacting the journal on start keeps what it says: where to resume, what is finished above
// that, what must run again, the last turn number.
func TestCompactedJournalSaysTheSame(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	require.NoError(t, err)
	ev := func(seq int64, idea string) Event {
		return Event{ID: strconv.FormatInt(seq, 10), Seq: seq, Kind: "task_assigned", EntityType: "task", EntityUUID: "t", IdeaUUID: idea}
	}
	cur := func(c int64) *int64 { return &c }
	for i := range 20 { // twenty finished turns, the cursor moving on
		seq := int64(i + 1)
		require.NoError(t, j.append(Record{Type: turnStarted, Turn: fmt.Sprintf("%06d", i+1), Events: []Event{ev(seq, "a")}, Cursor: cur(seq - 1)}))
		require.NoError(t, j.append(Record{Type: turnFinished, Turn: fmt.Sprintf("%06d", i+1), Outcome: OutcomeOK, Cursor: cur(seq)}))
	}
	// 21 starts and never finishes; 22 finishes (above the cursor); a catch-up never finishes;
	// 23 was started twice, the second time finished.
	require.NoError(t, j.append(Record{Type: turnStarted, Turn: "000021", Events: []Event{ev(21, "a")}, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnStarted, Turn: "000022", Events: []Event{ev(22, "b")}, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnFinished, Turn: "000022", Outcome: OutcomeFailed, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnStarted, Turn: "000023", Events: []Event{{Kind: GapKind, Reason: CatchUpFirstStart}}, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnStarted, Turn: "000024", Events: []Event{ev(23, "c")}, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnStarted, Turn: "000025", Events: []Event{ev(23, "c")}, Cursor: cur(20)}))
	require.NoError(t, j.append(Record{Type: turnFinished, Turn: "000025", Outcome: OutcomeOK, Cursor: cur(20)}))
	require.NoError(t, j.close())

	before, err := readJournal(dir)
	require.NoError(t, err)
	require.Equal(t, int64(20), before.cursor)
	require.Equal(t, map[int64]bool{22: true, 23: true}, before.finished)
	require.Equal(t, []Event{ev(21, "a")}, before.unfinished)
	require.True(t, before.catchUp)
	require.Equal(t, CatchUpFirstStart, before.catchUpReason)
	require.False(t, before.fresh)
	require.Equal(t, 25, before.lastTurn)
	require.Equal(t, int64(23), before.highest)

	require.NoError(t, compactJournal(dir, before))
	after, err := readJournal(dir)
	require.NoError(t, err)
	require.Equal(t, 4, after.lines)
	after.lines = before.lines
	require.Equal(t, before, after)
	require.NoFileExists(t, filepath.Join(dir, JournalFile+".compacting"))
}

// turnStarts is the turns the stamps say started, as "turn:ids:kinds".
func (h *harness) turnStarts() []string {
	var out []string
	for _, s := range h.readStamps() {
		if s.what == "start" {
			out = append(out, s.turn+":"+s.ids+":"+s.kinds)
		}
	}
	return out
}

// On a state directory with no journal, the runner first runs one catch-up turn (the work
// given to the agent before it connected is in no event it reads), then follows the stream
// from the newest event, starting no other turn until the catch-up ends; started again with the
// journal, it runs no catch-up turn.
func TestFirstStartRunsOneCatchUpTurn(t *testing.T) {
	f, url := newFakeEvents(t)
	f.publish("task_assigned", "task", "old", "idea-old") // before the runner: not replayed
	h := newHarness(t, url)
	h.agent.NoCatchUp = false
	h.start()
	h.waitStamp("start", "000001")
	waitConnected(t, f, 1)
	require.Equal(t, []string{"-"}, f.connections(), "after the catch-up, the stream starts at the newest event")
	f.publish("task_assigned", "task", "t-2", "idea-a") // 2
	// The event's turn waits while the catch-up runs, so both cannot take up the same work.
	time.Sleep(300 * time.Millisecond) // a chance for a wrong start, not a wait for a right one
	require.Equal(t, []string{"000001::gap"}, h.turnStarts(), "no turn starts while the catch-up runs")
	h.release("all")
	h.waitStamp("end", "000001")
	h.waitStamp("start", "000002")
	h.waitStamp("end", "000002")
	require.Eventually(t, func() bool { return len(h.journal()) == 4 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())

	require.Equal(t, []string{"000001::gap", "000002:2:task_assigned"}, h.turnStarts(),
		"one catch-up turn, before any event's turn; event 1 is not replayed")
	first := h.started()[0]
	require.Equal(t, "catch-up", first.Group)
	require.Equal(t, []Event{{Kind: GapKind, Reason: CatchUpFirstStart}}, first.Events)
	prompt, err := os.ReadFile(filepath.Join(h.dir, "prompt-000001"))
	require.NoError(t, err)
	require.Contains(t, string(prompt), "Catch up: the runner has just started for you for the first time")
	require.Contains(t, string(prompt), "chorus_checkin")
	require.Contains(t, string(prompt), "chorus_get_my_assignments")
	require.Contains(t, h.logs.String(), "no journal yet in the state directory: running a catch-up turn")
	log, err := os.ReadFile(filepath.Join(h.agent.StateDir, TurnsDir, "000001.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "events:  catch-up (the runner's first start)")

	// Started again: the journal is there, so no catch-up; the stream resumes after event 2.
	h.start()
	waitConnected(t, f, 2)
	f.publish("mentioned", "task", "t-2", "idea-a") // 3
	h.waitStamp("end", "000003")
	require.NoError(t, h.stop())
	require.Equal(t, []string{"-", "2"}, f.connections())
	require.Equal(t, []string{"000001::gap", "000002:2:task_assigned", "000003:3:mentioned"}, h.turnStarts())
}

// A runner stopped during the first start's catch-up turn (killed when the grace ends, as by a
// crash: the journal has its start, not its finish) runs it again on the next start, once.
func TestCatchUpCutShortRunsAgainOnce(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.agent.NoCatchUp = false
	h.opts.Grace = 50 * time.Millisecond
	h.start()
	h.waitStamp("start", "000001")
	waitConnected(t, f, 1)
	require.NoError(t, h.stop())
	require.Contains(t, h.logs.String(), "outcome=interrupted")
	require.Len(t, h.journal(), 1, "only the start: the catch-up did not finish")

	h.release("all")
	h.start()
	h.waitStamp("end", "000002")
	waitConnected(t, f, 2)
	require.Eventually(t, func() bool { return len(h.journal()) == 3 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())
	require.Contains(t, h.logs.String(), "resuming turns the runner stopped during")
	require.Equal(t, []Event{{Kind: GapKind, Reason: CatchUpFirstStart}}, h.started()[1].Events, "the same catch-up, again")
	prompt, err := os.ReadFile(filepath.Join(h.dir, "prompt-000002"))
	require.NoError(t, err)
	require.Contains(t, string(prompt), "for the first time")

	// Finished now: a third start runs nothing.
	h.start()
	waitConnected(t, f, 3)
	f.publish("task_assigned", "task", "t-1", "idea-a") // 1
	h.waitStamp("end", "000003")
	require.NoError(t, h.stop())
	require.Equal(t, []string{"000001::gap", "000002::gap", "000003:1:task_assigned"}, h.turnStarts())
}

// --no-catch-up ("catchUp": false): a fresh state directory runs no catch-up turn; the first
// turn is the first event's.
func TestNoCatchUpRunsNone(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.agent.NoCatchUp = true
	h.release("all")
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "t-1", "idea-a")
	h.waitStamp("end", "000001")
	require.NoError(t, h.stop())
	require.Equal(t, []string{"000001:1:task_assigned"}, h.turnStarts())
	require.NotContains(t, h.logs.String(), "catch-up")
}

// A dry run on a fresh state directory prints the catch-up turn like any other, and writes
// nothing.
func TestDryRunPrintsTheCatchUpTurn(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	h.agent.NoCatchUp = false
	var out syncBuf
	h.opts.DryRun, h.opts.Out = true, &out
	h.start()
	waitConnected(t, f, 1)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "=== turn 000001") }, time.Minute, 10*time.Millisecond)
	require.NoError(t, h.stop())
	plan := out.String()
	require.Contains(t, plan, "events:  catch-up (the runner's first start)\n")
	require.Contains(t, plan, "CHORUS_EVENT_KINDS=gap\n")
	require.Contains(t, plan, "Catch up: the runner has just started for you for the first time")
	require.NoDirExists(t, h.agent.StateDir, "a dry run writes no state")
}
