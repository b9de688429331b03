// Package stream serves GET /api/events: a caller's lifecycle events as Server-Sent Events
// (docs/rules.md §7.4), so an idle agent or an open console page learns of work without polling.
// It is a front end over app.OpenEvents, like the MCP tools and the console; who the caller is
// comes from those front ends' own authentication (an API key, a console session).
package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Path is where the stream is served.
const Path = "/api/events"

// Defaults of Config.
const (
	DefaultHeartbeat = 15 * time.Second
	DefaultRecheck   = 5 * time.Second
	// DefaultPerCaller bounds the streams one agent or person may hold open at once in one process.
	DefaultPerCaller = 16
	// writePatience is how long one write to a client may block: a client that stops reading
	// loses its stream rather than holding it forever (it resumes with Last-Event-ID).
	writePatience = 30 * time.Second
	// maxFilterValues bounds the project and kind values of one request.
	maxFilterValues = 50
)

// Who authenticates a request. It returns the caller, or ok false when the request carries no
// credential of its kind; an error is a credential refused (its text is shown) or an outage.
type Who func(r *http.Request) (p app.Principal, ok bool, err error)

// Config is what the stream runs on.
type Config struct {
	App *app.App
	Log *slog.Logger
	// Key and Session authenticate: by "Authorization: Bearer cho_..." and by the console's
	// session cookie. Key is tried first; Session may be nil.
	Key, Session Who
	// Heartbeat is how often an idle stream sends a comment line (default 15 s); Recheck how
	// often the credential is checked again, so a revoked key or an ended session ends the
	// stream (default 5 s); PerCaller caps one caller's open streams (default 16).
	Heartbeat, Recheck time.Duration
	PerCaller          int
}

// Server serves the stream.
type Server struct {
	cfg  Config
	mu   sync.Mutex
	open map[string]int
}

// New makes the server; Mount routes it.
func New(cfg Config) *Server {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultRecheck
	}
	if cfg.PerCaller <= 0 {
		cfg.PerCaller = DefaultPerCaller
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, open: map[string]int{}}
}

// Mount routes GET Path on e.
func (s *Server) Mount(e *echo.Echo) { e.GET(Path, s.serve) }

// MountSession routes the same stream at path for console pages, authenticated by the session
// alone: the browser sends the session cookie only under the console's own path.
func (s *Server) MountSession(e *echo.Echo, path string) {
	e.GET(path, func(c echo.Context) error { return s.serveWith(c, s.sessionOnly) })
}

// Refusals of the stream, written once here.
const (
	errNoCredential = "Missing or invalid API key: send Authorization: Bearer cho_... (or sign in to the console)"
	errTooMany      = "Too many open event streams for this caller (%d); close one before opening another"
	errUnavailable  = "Chorus cannot reach its database right now; reconnect in a few seconds with the same Last-Event-ID"
	errTooManyVals  = "Too many project or kind values (at most %d of each); follow fewer, or all of them by leaving the filter out"
)

func (s *Server) who(r *http.Request) (app.Principal, Who, error) {
	return s.firstOf(r, s.cfg.Key, s.cfg.Session)
}

func (s *Server) sessionOnly(r *http.Request) (app.Principal, Who, error) {
	return s.firstOf(r, s.cfg.Session)
}

// firstOf authenticates r by the first of ws that finds a credential of its kind.
func (s *Server) firstOf(r *http.Request, ws ...Who) (app.Principal, Who, error) {
	for _, w := range ws {
		if w == nil {
			continue
		}
		p, ok, err := w(r)
		if err != nil {
			return app.Principal{}, nil, err
		}
		if ok {
			return p, w, nil
		}
	}
	return app.Principal{}, nil, errors.New(errNoCredential)
}

func refuse(c echo.Context, status int, msg string) error {
	return c.JSON(status, map[string]string{"error": msg})
}

func (s *Server) serve(c echo.Context) error { return s.serveWith(c, s.who) }

func (s *Server) serveWith(c echo.Context, auth func(*http.Request) (app.Principal, Who, error)) error {
	req := c.Request()
	p, who, err := auth(req)
	switch {
	case store.IsUnavailable(err):
		c.Response().Header().Set("Retry-After", "5")
		return refuse(c, http.StatusServiceUnavailable, errUnavailable)
	case err != nil:
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="chorus"`)
		return refuse(c, http.StatusUnauthorized, err.Error())
	}
	q := req.URL.Query()
	last := req.Header.Get("Last-Event-ID")
	if last == "" {
		last = q.Get("lastEventId")
	}
	if len(q["project"]) > maxFilterValues || len(list(q["kind"])) > maxFilterValues {
		return refuse(c, http.StatusBadRequest, fmt.Sprintf(errTooManyVals, maxFilterValues))
	}
	opts := app.EventStreamOptions{Projects: q["project"], Kinds: list(q["kind"]), Scope: q.Get("scope"), LastEventID: last}
	id := p.Caller.Kind() + "/" + p.Caller.AgentUUID
	if !s.take(id) {
		return refuse(c, http.StatusTooManyRequests, fmt.Sprintf(errTooMany, s.cfg.PerCaller))
	}
	defer s.give(id)
	ctx := req.Context()
	st, err := s.cfg.App.OpenEvents(ctx, app.Request{Who: p}, opts)
	if err != nil {
		if v := app.Classify(err); v.Known() {
			status := http.StatusBadRequest
			switch {
			case store.IsUnavailable(err):
				status = http.StatusServiceUnavailable
			case v.Kind == string(vocab.RefusedNotFound):
				status = http.StatusNotFound
			}
			return refuse(c, status, v.Msg)
		}
		s.cfg.Log.ErrorContext(ctx, "events: open", "err", err)
		return refuse(c, http.StatusInternalServerError, "Internal server error")
	}
	defer st.Close()

	res := c.Response()
	// A stream outlives any write deadline the server has for ordinary answers; each write gets
	// its own (pump).
	rc := http.NewResponseController(res.Writer)
	_ = rc.SetWriteDeadline(time.Now().Add(writePatience))
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(res, "retry: 2000\n\n"); err != nil {
		return nil
	}
	if st.Gap > 0 {
		if !frame(res, "", "gap", map[string]string{"kind": "gap", "oldestId": fmt.Sprint(st.Gap)}) {
			return nil
		}
	}
	res.Flush()
	return s.pump(ctx, res, rc, st, func() bool { return s.stillValid(req, p, who) })
}

// pump sends events as they come, a heartbeat when idle, and ends when the client goes, the
// credential stops being valid, or the database fails (the client resumes with Last-Event-ID).
func (s *Server) pump(ctx context.Context, res *echo.Response, rc *http.ResponseController, st *app.EventStream,
	valid func() bool) error {
	lastSend, lastCheck := time.Now(), time.Now()
	for {
		wait := min(time.Until(lastSend.Add(s.cfg.Heartbeat)), time.Until(lastCheck.Add(s.cfg.Recheck)))
		evs, err := st.Next(ctx, max(wait, time.Millisecond))
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.cfg.Log.WarnContext(ctx, "events: read", "err", err)
			return nil
		}
		if time.Since(lastCheck) >= s.cfg.Recheck {
			if !valid() {
				return nil
			}
			lastCheck = time.Now()
		}
		_ = rc.SetWriteDeadline(time.Now().Add(writePatience))
		for _, ev := range evs {
			w := ev.Wire()
			if !frame(res, w.ID, w.Kind, w) {
				return nil
			}
		}
		switch {
		case len(evs) > 0:
		case time.Since(lastSend) >= s.cfg.Heartbeat:
			if _, err := fmt.Fprint(res, ": ping\n\n"); err != nil {
				return nil
			}
		default:
			continue
		}
		res.Flush()
		lastSend = time.Now()
	}
}

// stillValid checks the stream's credential again: the same caller, its key not revoked or
// expired, its session not ended. An outage keeps the stream (the next check decides).
func (s *Server) stillValid(r *http.Request, p app.Principal, who Who) bool {
	q, ok, err := who(r)
	if store.IsUnavailable(err) {
		return true
	}
	return err == nil && ok && q.Caller.AgentUUID == p.Caller.AgentUUID
}

// frame writes one SSE event; false when the client is gone.
func frame(res *echo.Response, id, event string, data any) bool {
	b, err := json.Marshal(data)
	if err != nil {
		return false
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + id + "\n")
	}
	sb.WriteString("event: " + event + "\ndata: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	_, err = res.Write([]byte(sb.String()))
	return err == nil
}

// list splits repeated and comma-separated values.
func list(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *Server) take(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] >= s.cfg.PerCaller {
		return false
	}
	s.open[id]++
	return true
}

func (s *Server) give(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id]--; s.open[id] <= 0 {
		delete(s.open, id)
	}
}
