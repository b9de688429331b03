package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// EventHub wakes this process's event readers (streams, the webhook dispatcher) when events they
// may want are numbered. One hub per process tails the events table: it numbers new events
// (SequenceEvents), reads whom the newly numbered ones are for, and wakes those readers; each
// reader then reads its own events from the table, so a reader that was away, slow or on another
// process misses nothing (docs/rules.md §7.4).
//
// It tails on a signal and on a timer: on PostgreSQL the signal is a NOTIFY on EventsChannel
// (sent by each writing transaction as it commits, so events written by any process wake every
// process) and the timer a PollEvery fallback; on SQLite the signal is Nudge (in process) and
// the timer PollEvery.
type EventHub struct {
	s   *Store
	log *slog.Logger
	// PollEvery is the fallback tail interval (default 1 s on PostgreSQL, 250 ms on SQLite).
	PollEvery time.Duration

	nudge chan struct{}
	mu    sync.Mutex
	top   int64
	subs  map[Recipient]map[*EventSub]struct{}
	any   map[*EventSub]struct{}
}

// EventSub is one reader's wake-up: C receives (at most one pending value) when events for its
// recipient, or any events for a subscriber of all, have been numbered.
type EventSub struct {
	C   <-chan struct{}
	c   chan struct{}
	r   Recipient
	all bool
	hub *EventHub
}

// NewEventHub makes the process's hub; Run tails.
func (s *Store) NewEventHub(log *slog.Logger) *EventHub {
	poll := time.Second
	if s.Dialect() != "pg" {
		poll = 250 * time.Millisecond
	}
	return &EventHub{s: s, log: log, PollEvery: poll, nudge: make(chan struct{}, 1),
		subs: map[Recipient]map[*EventSub]struct{}{}, any: map[*EventSub]struct{}{}}
}

// Subscribe registers a reader of r's events. Close it when done.
func (h *EventHub) Subscribe(r Recipient) *EventSub {
	c := make(chan struct{}, 1)
	sub := &EventSub{C: c, c: c, r: r, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[r] == nil {
		h.subs[r] = map[*EventSub]struct{}{}
	}
	h.subs[r][sub] = struct{}{}
	return sub
}

// SubscribeAll registers a reader of every event (the webhook dispatcher). Close it when done.
func (h *EventHub) SubscribeAll() *EventSub {
	c := make(chan struct{}, 1)
	sub := &EventSub{C: c, c: c, all: true, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.any[sub] = struct{}{}
	return sub
}

// Close unregisters the reader.
func (sub *EventSub) Close() {
	h := sub.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if sub.all {
		delete(h.any, sub)
		return
	}
	delete(h.subs[sub.r], sub)
	if len(h.subs[sub.r]) == 0 {
		delete(h.subs, sub.r)
	}
}

// Subscribers is how many readers are registered (for metrics and tests).
func (h *EventHub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.any)
	for _, m := range h.subs {
		n += len(m)
	}
	return n
}

// Nudge asks the hub to tail now (an event was written in this process).
func (h *EventHub) Nudge() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

func ping(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run tails until ctx ends. Database errors are logged and retried on the next tick: readers
// catch up from the table when it answers again.
func (h *EventHub) Run(ctx context.Context) {
	if h.s.Dialect() == "pg" {
		go h.listen(ctx)
	}
	top, err := h.s.LastEventSeq(ctx)
	if err != nil {
		h.log.Warn("events: reading the last event", "err", err)
	}
	h.mu.Lock()
	h.top = top
	h.mu.Unlock()
	tick := time.NewTicker(h.PollEvery)
	defer tick.Stop()
	for {
		if err := h.tail(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("events: tailing", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.nudge:
		}
	}
}

// tail numbers new events and wakes the readers of every event numbered since the last tail.
func (h *EventHub) tail(ctx context.Context) error {
	if _, err := h.s.SequenceEvents(ctx); err != nil {
		return err
	}
	for {
		h.mu.Lock()
		after := h.top
		h.mu.Unlock()
		const batch = 1000
		rs, top, err := h.s.NewEventRecipients(ctx, after, batch)
		if err != nil || top == after {
			return err
		}
		h.mu.Lock()
		h.top = top
		for _, r := range rs {
			for sub := range h.subs[r] {
				ping(sub.c)
			}
		}
		for sub := range h.any {
			ping(sub.c)
		}
		h.mu.Unlock()
		if top-after < batch {
			return nil
		}
	}
}

// listen holds one PostgreSQL connection that LISTENs on EventsChannel and nudges the hub on
// each notification, reconnecting after a failure. Without it (a wrapped driver in tests, a
// connection refused) the hub still tails every PollEvery.
func (h *EventHub) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := h.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("events: listening for notifications; tailing on a timer until it works again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

func (h *EventHub) listenOnce(ctx context.Context) error {
	conn, err := h.s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			<-ctx.Done() // not pgx underneath (a test's wrapper): the timer alone tails
			return ctx.Err()
		}
		pc := sc.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+EventsChannel); err != nil {
			return err
		}
		// The connection goes back to the pool afterwards: stop listening on it first.
		defer func() { _, _ = pc.Exec(context.WithoutCancel(ctx), "UNLISTEN *") }()
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				// The connection may be broken or mid-cancel: the pool must not reuse it.
				return fmt.Errorf("%w: %v", driver.ErrBadConn, err)
			}
			h.Nudge()
		}
	})
}
