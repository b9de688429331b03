package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// JournalFile is the journal's name in an agent's state directory.
const JournalFile = "journal.jsonl"

// Record is one line of the journal: a turn started (its id, the idea or entity it serves and
// the events it handles) or a turn finished (its outcome). Cursor is the stream position below
// which, when the record was written, every event was finished or not needed: where a restart
// resumes the stream (Last-Event-ID).
type Record struct {
	Type   string  `json:"type"` // turn_started or turn_finished
	Turn   string  `json:"turn"`
	Group  string  `json:"group,omitempty"`
	Events []Event `json:"events,omitempty"`
	// Outcome is ok, failed, timeout or error (turn_finished).
	Outcome  string    `json:"outcome,omitempty"`
	ExitCode *int      `json:"exitCode,omitempty"`
	Cursor   *int64    `json:"cursor,omitempty"`
	At       time.Time `json:"at"`
}

// Record types.
const (
	turnStarted  = "turn_started"
	turnFinished = "turn_finished"
)

// journal appends records to <state>/journal.jsonl, one JSON line each, synced to disk before
// the append returns, so a record written is a record kept through a crash.
type journal struct {
	f *os.File
}

// openJournal opens the journal for appending; a last line cut short by a crash is dropped
// first so the next record starts on a line of its own.
func openJournal(dir string) (*journal, error) {
	path := filepath.Join(dir, JournalFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if n := bytes.LastIndexByte(b, '\n') + 1; n < len(b) {
		if err := f.Truncate(int64(n)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	return &journal{f: f}, nil
}

// append writes r and syncs it.
func (j *journal) append(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.f.Name(), err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.f.Name(), err)
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }

// resumeState is what a journal says about where to go on.
type resumeState struct {
	// cursor is where to resume the stream (hasCursor false: nothing journaled yet; start at the newest event).
	cursor    int64
	hasCursor bool
	// highest is the highest seq the journal names.
	highest int64
	// finished are the seqs above cursor handled by a finished turn: skipped when replayed.
	finished map[int64]bool
	// unfinished are the events of turns that started and never finished (the runner stopped
	// during them), in seq order: they run again. catchUp says a catch-up turn did not finish,
	// and catchUpReason why it ran (the Reason of its marker event).
	unfinished    []Event
	catchUp       bool
	catchUpReason string
	// lastTurn is the highest turn number used.
	lastTurn int
	// lines is the number of records read.
	lines int
	// fresh says the journal holds no record yet (none was ever written, or the file is
	// missing): the runner has never run a turn from this state directory.
	fresh bool
}

// readJournal reads the journal in dir (none yet is an empty state). A line that does not parse
// (the last one, cut by a crash) is ignored. An event is finished once any turn that handled it
// finished, whatever turns of it started before (a turn run again after a crash).
func readJournal(dir string) (resumeState, error) {
	st := resumeState{finished: map[int64]bool{}}
	f, err := os.Open(filepath.Join(dir, JournalFile))
	if errors.Is(err, os.ErrNotExist) {
		st.fresh = true
		return st, nil
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	started := map[string][]Event{}
	pending := map[int64]Event{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		st.lines++
		if r.Cursor != nil && (!st.hasCursor || *r.Cursor > st.cursor) {
			st.cursor, st.hasCursor = *r.Cursor, true
		}
		if n, err := strconv.Atoi(r.Turn); err == nil && n > st.lastTurn {
			st.lastTurn = n
		}
		switch r.Type {
		case turnStarted:
			for i := range r.Events {
				e := &r.Events[i]
				if e.Kind == GapKind {
					st.catchUp, st.catchUpReason = true, e.Reason
					continue
				}
				e.Seq, _ = strconv.ParseInt(e.ID, 10, 64)
				st.highest = max(st.highest, e.Seq)
				if e.Seq > 0 && !st.finished[e.Seq] {
					pending[e.Seq] = *e
				}
			}
			started[r.Turn] = r.Events
		case turnFinished:
			for _, e := range started[r.Turn] {
				if e.Kind == GapKind {
					st.catchUp, st.catchUpReason = false, ""
				} else if e.Seq > 0 {
					st.finished[e.Seq] = true
					delete(pending, e.Seq)
				}
			}
			delete(started, r.Turn)
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("journal %s: %w", f.Name(), err)
	}
	for seq := range st.finished {
		if seq <= st.cursor {
			delete(st.finished, seq)
		}
	}
	for _, e := range pending {
		st.unfinished = append(st.unfinished, e)
	}
	slices.SortFunc(st.unfinished, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	st.highest = max(st.highest, st.cursor)
	st.fresh = st.lines == 0
	return st, nil
}

// compactJournal rewrites the journal in dir as the few records that say the same as st (what
// readJournal made of it): the finished events above the cursor, the unfinished ones, the cursor
// and the last turn number. It writes a new file, syncs it and renames it over the old one, so
// a crash at any point leaves one whole journal. A journal with nothing to drop is left alone.
func compactJournal(dir string, st resumeState) error {
	var recs []Record
	at := time.Now().UTC()
	if len(st.finished) > 0 {
		var done []Event
		for _, seq := range slices.Sorted(maps.Keys(st.finished)) {
			done = append(done, Event{ID: strconv.FormatInt(seq, 10)})
		}
		recs = append(recs, Record{Type: turnStarted, Turn: "compacted", Events: done, At: at},
			Record{Type: turnFinished, Turn: "compacted", Outcome: "compacted", At: at})
	}
	pending := slices.Clone(st.unfinished)
	if st.catchUp {
		pending = append(pending, Event{Kind: GapKind, Reason: st.catchUpReason})
	}
	if len(pending) > 0 {
		recs = append(recs, Record{Type: turnStarted, Turn: "unfinished", Events: pending, At: at})
	}
	last := Record{Type: turnFinished, Turn: fmt.Sprintf("%06d", st.lastTurn), Outcome: "compacted", At: at}
	if st.hasCursor {
		c := st.cursor
		last.Cursor = &c
	}
	recs = append(recs, last)
	if st.lines <= len(recs) {
		return nil
	}
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(dir, JournalFile)
	tmp := path + ".compacting"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
