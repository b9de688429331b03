package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one event of GET /api/events (the data line of a frame; /work EVENTS.md "Wire
// format"): its public position Seq (the frame's id), its kind (a notification action,
// docs/rules.md §7.2) and the entity, idea and project it is about. It names ids and kinds only.
type Event struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	ProjectUUID string `json:"projectUuid,omitempty"`
	EntityType  string `json:"entityType,omitempty"`
	EntityUUID  string `json:"entityUuid,omitempty"`
	IdeaUUID    string `json:"ideaUuid,omitempty"`
	ActorType   string `json:"actorType,omitempty"`
	ActorUUID   string `json:"actorUuid,omitempty"`
	At          string `json:"at,omitempty"`
	// Reason, on a catch-up (kind GapKind), says why it runs: "" when events were lost to
	// pruning (the server's gap frame), CatchUpFirstStart when the runner starts on a state
	// directory with no journal yet. The server never sends it; the journal keeps it.
	Reason string `json:"reason,omitempty"`
	// Seq is ID as a number; 0 for a gap (it has no position).
	Seq int64 `json:"-"`
}

// GapKind is the kind of the frame the server sends first when the Last-Event-ID it was given
// is older than the oldest event it still keeps: events were lost to pruning.
const GapKind = "gap"

// CatchUpFirstStart is the Reason of the catch-up turn a runner runs when it starts on a state
// directory with no journal yet: the work given to the agent before the runner first connected
// is in no event it will read.
const CatchUpFirstStart = "first_start"

// frame is one dispatched Server-Sent Events message.
type frame struct {
	id, event string
	hasID     bool
	data      []byte
}

// fatalError ends an agent's stream for good: the server refused the request in a way a retry
// cannot fix (a refused key, an unknown kind, no events endpoint).
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

// retryAfter is a refusal that says when to try again (503 with Retry-After).
type retryAfter struct {
	wait time.Duration
	msg  string
}

func (e *retryAfter) Error() string { return e.msg }

// stream follows one agent's GET <origin>/api/events: it resumes from the last id it saw
// (Last-Event-ID), reconnects after a dropped connection with a backoff whose base is the
// server's retry: value, and treats a connection silent for longer than idle (no event, no
// heartbeat) as dropped.
type stream struct {
	origin, key string
	kinds       []string
	client      *http.Client
	log         *slog.Logger
	idle        time.Duration
	// lastID is the id to resume after ("" with hasLast false: start at the newest event).
	lastID  string
	hasLast bool
	retry   time.Duration
	// connected, when set, is called each time a connection is open (the response headers read).
	connected func()
}

// maxBackoff bounds the wait between reconnection attempts.
const maxBackoff = 30 * time.Second

// MaxFrameBytes bounds one frame's data as the runner collects it: an event is a few hundred
// bytes, so a longer frame (a broken or hostile server, one that never ends its frame) drops the
// connection rather than the runner's memory.
const MaxFrameBytes = 1 << 20

// follow reads the stream until ctx ends (nil) or the server refuses it for good (a
// *fatalError), calling handle for each event in order (a gap as an Event of kind GapKind).
func (s *stream) follow(ctx context.Context, handle func(Event)) error {
	failures := 0
	for {
		got, err := s.once(ctx, handle)
		if ctx.Err() != nil {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return err
		}
		if got {
			failures = 0
		}
		failures++
		wait := s.retry << min(failures-1, 5)
		if wait > maxBackoff || wait <= 0 {
			wait = maxBackoff
		}
		if ra := (*retryAfter)(nil); errors.As(err, &ra) {
			wait = min(ra.wait, maxBackoff)
		}
		wait += time.Duration(rand.Int64N(int64(wait)/5 + 1)) // jitter, so many runners do not reconnect at once
		s.log.Warn("event stream interrupted; reconnecting", "after", wait.Round(time.Millisecond), "lastEventId", s.lastID, "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// once makes one connection and reads it until it ends; got says whether any frame arrived.
func (s *stream) once(ctx context.Context, handle func(Event)) (got bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := s.origin + "/api/events"
	q := ""
	if len(s.kinds) > 0 {
		q = "?" + url.Values{"kind": {strings.Join(s.kinds, ",")}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+q, nil)
	if err != nil {
		return false, &fatalError{fmt.Sprintf("bad url %s: %v", u, err)}
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Accept", "text/event-stream")
	if s.hasLast {
		req.Header.Set("Last-Event-ID", s.lastID)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if err := s.refusal(u, resp); err != nil {
		return false, err
	}
	if s.connected != nil {
		s.connected()
	}
	// The watchdog: a connection that carries nothing (not even a heartbeat) for idle is dead.
	watchdog := time.AfterFunc(s.idle, cancel)
	defer watchdog.Stop()

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var f frame
	var data [][]byte
	size := 0
	for sc.Scan() {
		watchdog.Reset(s.idle)
		line := sc.Bytes()
		if len(line) == 0 { // dispatch
			if f.hasID && position(f.id) {
				s.lastID, s.hasLast = f.id, true
			}
			if len(data) > 0 || f.event != "" {
				f.data = bytes.Join(data, []byte("\n"))
				got = true
				if ev, ok := s.decode(f); ok {
					handle(ev)
				}
			}
			f, data, size = frame{}, nil, 0
			continue
		}
		if line[0] == ':' {
			continue // a comment: the heartbeat
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			f.id, f.hasID = string(value), true
		case "event":
			f.event = string(value)
		case "data":
			if size += len(value) + 1; size > MaxFrameBytes {
				return got, fmt.Errorf("a frame longer than %d bytes; dropping the connection", MaxFrameBytes)
			}
			data = append(data, bytes.Clone(value))
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return got, err
	}
	if ctx.Err() != nil && s.idle > 0 {
		return got, fmt.Errorf("no event or heartbeat for %s", s.idle)
	}
	return got, errors.New("the server closed the stream")
}

// position says whether a frame's id is an event position (a whole number), the only kind of
// id the runner sends back as Last-Event-ID: anything else (a broken or hostile server) would
// make every reconnection fail, or carry the server's text into a header.
func position(id string) bool {
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == id
}

// refusal turns a response that is no event stream into an error: fatal for a refused key or
// request (401, 403, 400, 404) or a body that is not text/event-stream, retryable otherwise.
func (s *stream) refusal(u string, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if ct != "text/event-stream" {
			return &fatalError{fmt.Sprintf("%s answered %q, not an event stream: is --url the Chorus server's address?", u, ct)}
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(b))
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != "" {
		msg = body.Error
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return &fatalError{fmt.Sprintf("%s refused the key (%d): %s", u, resp.StatusCode, msg)}
	case http.StatusBadRequest:
		return &fatalError{fmt.Sprintf("%s refused the request (400): %s", u, msg)}
	case http.StatusNotFound:
		if body.Error == "" {
			msg = "not found; this server has no event stream (it needs a Chorus with GET /api/events)"
		}
		return &fatalError{fmt.Sprintf("%s refused the request (404): %s", u, msg)}
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		return &retryAfter{wait: time.Duration(secs) * time.Second, msg: fmt.Sprintf("%s answered %d: %s", u, resp.StatusCode, msg)}
	}
	return fmt.Errorf("%s answered %d: %s", u, resp.StatusCode, msg)
}

// decode reads a frame's data; a frame that is not an event this runner knows is logged and skipped.
func (s *stream) decode(f frame) (Event, bool) {
	var ev Event
	if err := json.Unmarshal(f.data, &ev); err != nil {
		s.log.Warn("skipping an event frame that is not JSON", "event", f.event, "id", f.id, "error", err)
		return Event{}, false
	}
	if f.event == GapKind || ev.Kind == GapKind {
		return Event{Kind: GapKind}, true
	}
	if ev.Kind == "" {
		ev.Kind = f.event
	}
	if ev.ID == "" {
		ev.ID = f.id
	}
	seq, err := strconv.ParseInt(ev.ID, 10, 64)
	if err != nil || seq <= 0 {
		s.log.Warn("skipping an event without a numeric id", "event", f.event, "id", ev.ID)
		return Event{}, false
	}
	ev.Seq = seq
	return ev, true
}
