package app

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// EventBatch bounds how many events one read of a stream takes from the table.
const EventBatch = 200

// EventStreamOptions say which of the caller's events a stream sends and where it starts.
type EventStreamOptions struct {
	// Projects and Kinds narrow the stream (none: all the caller's). A project must be one the
	// caller can see; a kind one of vocab.EventKinds.
	Projects, Kinds []string
	// Scope is "mine" (default: the events whose notifications went to the caller) or "project":
	// every event of the one project named in Projects, whoever it was for (a board that follows
	// a project's work). Either way only projects the caller can see.
	Scope string
	// LastEventID is the resume point a client sends (the id of the last event it handled):
	// "" starts at the newest event, "0" replays everything kept.
	LastEventID string
}

// EventStream is one open subscription to the caller's events (docs/rules.md §7.4). Next blocks
// until there are events to send; the front end writes them and calls Next again.
type EventStream struct {
	a      *App
	who    Principal
	r      store.Recipient
	f      store.EventFilter
	cursor int64
	sub    *store.EventSub
	// project is set for a stream of one project's events (Scope "project").
	project string
	// Gap is set when the resume point is older than the oldest event kept: events were pruned
	// in between, so the client should read its state again. Its value is the oldest seq kept.
	Gap int64
}

// Refusals of OpenEvents, written once here.
const (
	errEventsNoHub  = "The event stream is not served by this process"
	errEventsLastID = "Last-Event-ID must be the id of an event this stream sent (a whole number of 0 or more); got %q. Reconnect without it to start from now."
	errEventsKind   = "kind %q is not an event kind; use one or more of: %s"
	errEventsScope  = "scope must be mine (your events) or project (every event of one project, named by one project parameter); got %q"
)

// OpenEvents opens the caller's event stream: the events their notifications announce, of the
// projects they can see (docs/rules.md §7.4). Errors: a kind, a project or a LastEventID that is
// not valid (ErrInvalidArgs-kind refusals that name the field); the store's errors.
func (a *App) OpenEvents(ctx context.Context, r Request, o EventStreamOptions) (*EventStream, error) {
	if a.Events == nil {
		return nil, errors.New(errEventsNoHub)
	}
	s := &EventStream{a: a, who: r.Who, r: store.Recipient{Type: r.Who.Caller.Kind(), UUID: r.Who.Caller.AgentUUID}}
	for _, k := range o.Kinds {
		if !slices.Contains(vocab.EventKinds, k) {
			return nil, Refuse(vocab.RefusedInvalid, errEventsKind, k, strings.Join(vocab.EventKinds, ", "))
		}
	}
	for _, p := range o.Projects {
		// A project the caller cannot see answers as one that does not exist ("Project not found").
		// The access gate alone (no entity counts): a request may name up to 50 projects.
		if _, err := a.Store.RequireProject(ctx, r.Who.Caller, p, store.AccessViewer); err != nil {
			return nil, err
		}
	}
	s.f = store.EventFilter{Projects: o.Projects, Kinds: o.Kinds}
	switch o.Scope {
	case "", "mine":
		// Subscribe before reading the resume point, so nothing numbered in between is missed.
		s.sub = a.Events.Subscribe(s.r)
	case "project":
		if len(o.Projects) != 1 {
			return nil, Refuse(vocab.RefusedInvalid, errEventsScope, o.Scope)
		}
		s.project = o.Projects[0]
		s.sub = a.Events.SubscribeAll()
	default:
		return nil, Refuse(vocab.RefusedInvalid, errEventsScope, o.Scope)
	}
	top, err := a.Store.SequenceEvents(ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	switch o.LastEventID {
	case "":
		s.cursor = top
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(o.LastEventID), 10, 64)
		if err != nil || n < 0 {
			s.Close()
			return nil, Refuse(vocab.RefusedInvalid, errEventsLastID, o.LastEventID)
		}
		s.cursor = min(n, top)
		oldest, err := a.Store.OldestEventSeq(ctx)
		if err != nil {
			s.Close()
			return nil, err
		}
		if oldest > 0 && s.cursor < oldest-1 {
			s.Gap = oldest
		}
	}
	return s, nil
}

// Cursor is the seq of the last event the stream passed over (sent or hidden).
func (s *EventStream) Cursor() int64 { return s.cursor }

// Next returns the next events to send, at most EventBatch, waiting up to wait for some; it
// returns none when wait passes or ctx ends first (the front end then sends a heartbeat or
// stops). Events of a project the caller cannot see now are passed over, never returned.
func (s *EventStream) Next(ctx context.Context, wait time.Duration) ([]store.Event, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		evs, top, err := s.read(ctx)
		if err != nil {
			return nil, err
		}
		moved := top > s.cursor
		s.cursor = top
		if len(evs) > 0 {
			return evs, nil
		}
		if moved {
			continue // a batch of hidden events: read on
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-timer.C:
			return nil, nil
		case <-s.sub.C:
		}
	}
}

func (s *EventStream) read(ctx context.Context) ([]store.Event, int64, error) {
	if s.project != "" {
		return s.a.Store.ProjectEventsAfter(ctx, s.who.Caller, s.project, s.cursor, EventBatch, s.f)
	}
	return s.a.Store.RecipientEventsAfter(ctx, s.who.Caller, s.r, s.cursor, EventBatch, s.f)
}

// Close ends the subscription.
func (s *EventStream) Close() {
	if s.sub != nil {
		s.sub.Close()
		s.sub = nil
	}
}
