package app

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// fakeLedger is a ReservationLedger in memory: busy names tasks another call holds, until
// freeAfter reservations have been refused for them.
type fakeLedger struct {
	mu        sync.Mutex
	busy      map[string]int // task -> refusals left before it is free
	held      map[string]string
	released  []string
	reserveAt []string
}

func (l *fakeLedger) ReserveClaim(_ context.Context, task, holder string, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ttl != 30*time.Second {
		return false, errors.New("reservations must lapse after 30 s")
	}
	l.reserveAt = append(l.reserveAt, task)
	if l.busy[task] > 0 {
		l.busy[task]--
		return false, nil
	}
	if h, ok := l.held[task]; ok && h != holder {
		return false, nil
	}
	l.held[task] = holder
	return true, nil
}

func (l *fakeLedger) ReleaseClaim(_ context.Context, task, holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[task] == holder {
		delete(l.held, task)
	}
	l.released = append(l.released, task)
	return nil
}

// fakeTasks proposes open tasks in order and answers claims as their workflows would: refused
// for the tasks in taken, granted otherwise.
type fakeTasks struct {
	open    []string
	taken   map[string]bool
	asked   []string
	outage  error
	claimed string
}

func (f *fakeTasks) run(l *fakeLedger) claimNextRun {
	return claimNextRun{
		ledger: l,
		candidates: func(_ context.Context, skip []string) ([]store.Task, error) {
			var out []store.Task
			for _, u := range f.open {
				if !slices.Contains(skip, u) && u != f.claimed && len(out) < claimNextBatch {
					out = append(out, store.Task{UUID: u, ProjectUUID: "p"})
				}
			}
			return out, nil
		},
		claim: func(_ context.Context, t store.Task) error {
			f.asked = append(f.asked, t.UUID)
			if f.outage != nil {
				return f.outage
			}
			if f.taken[t.UUID] {
				return workflows.Refuse(workflows.KindConflict, "Task is already claimed")
			}
			f.claimed = t.UUID
			return nil
		},
		moved: func(context.Context, store.Task) bool { return false },
	}
}

func newLedger(busy map[string]int) *fakeLedger {
	if busy == nil {
		busy = map[string]int{}
	}
	return &fakeLedger{busy: busy, held: map[string]string{}}
}

func TestClaimNextTakesTheFirstGrantedCandidate(t *testing.T) {
	f := &fakeTasks{open: []string{"a", "b", "c"}, taken: map[string]bool{"a": true}}
	l := newLedger(nil)
	got, err := f.run(l).loop(context.Background(), "h", nil)
	require.NoError(t, err)
	assert.Equal(t, "b", got)
	assert.Equal(t, []string{"a", "b"}, f.asked, "a refused candidate is skipped for the next")
	assert.Equal(t, []string{"a", "b"}, l.released, "every reservation is released once its claim is answered")
	assert.Empty(t, l.held)
}

func TestClaimNextSkipsABusyCandidateThenReturnsToIt(t *testing.T) {
	// a is being asked for by another call; b is refused. Only a is left, so the call waits
	// and asks for a once the other call let go of it.
	f := &fakeTasks{open: []string{"a", "b"}, taken: map[string]bool{"b": true}}
	l := newLedger(map[string]int{"a": 1})
	got, err := f.run(l).loop(context.Background(), "h", nil)
	require.NoError(t, err)
	assert.Equal(t, "a", got)
	assert.Equal(t, []string{"b", "a"}, f.asked)
}

func TestClaimNextAnswersNoneOnlyWhenNoCandidateRemains(t *testing.T) {
	f := &fakeTasks{open: []string{"a", "b"}, taken: map[string]bool{"a": true, "b": true}}
	_, err := f.run(newLedger(nil)).loop(context.Background(), "h", nil)
	require.ErrorIs(t, err, errNoTaskAvailable)
	assert.Equal(t, []string{"a", "b"}, f.asked)

	// The tasks tried before (a retry's last task) are not asked again.
	f = &fakeTasks{open: []string{"a", "b"}, taken: map[string]bool{"b": true}}
	_, err = f.run(newLedger(nil)).loop(context.Background(), "h", []string{"a"})
	require.ErrorIs(t, err, errNoTaskAvailable)
	assert.Equal(t, []string{"b"}, f.asked)
}

func TestClaimNextDeadlineWhileWaitingIsAConflictRefusal(t *testing.T) {
	f := &fakeTasks{open: []string{"a"}}
	l := newLedger(map[string]int{"a": 1 << 30}) // another call holds a for ever
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.run(l).loop(ctx, "h", nil)
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, vocab.RefusedConflict, r.Kind)
	assert.Equal(t, "No task could be claimed before this call's deadline: every task left was being claimed by "+
		"another agent at the same moment. Nothing was claimed for you; call again.", r.Msg)
	assert.Empty(t, f.asked, "no claim was sent")
}

func TestClaimNextOutageEndsTheCall(t *testing.T) {
	outage := errors.New("unreachable")
	f := &fakeTasks{open: []string{"a", "b"}, outage: outage}
	l := newLedger(nil)
	_, err := f.run(l).loop(context.Background(), "h", nil)
	require.ErrorIs(t, err, outage)
	assert.Equal(t, []string{"a"}, f.asked, "an unknown outcome is never followed by a second claim")
	assert.Equal(t, []string{"a"}, l.released)
}

func TestClaimNextAlreadyAppliedCountsAsClaimed(t *testing.T) {
	run := (&fakeTasks{open: []string{"a"}}).run(newLedger(nil))
	run.claim = func(context.Context, store.Task) error {
		return workflows.Refuse(workflows.KindAlreadyApplied, "applied before")
	}
	got, err := run.loop(context.Background(), "h", nil)
	require.NoError(t, err)
	assert.Equal(t, "a", got)
}
