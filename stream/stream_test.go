package stream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/stream"
)

// world is one company on one database: its admin agent, a second agent with its own key and
// owner, and a public project.
type world struct {
	dsn      string
	st       *store.Store
	company  string
	admin    store.Agent
	dev      store.Agent
	devKey   string
	devOwner string
	adminKey string
	project  string
}

func newWorld(t *testing.T, dialect string) *world {
	dsn := storetest.NewDSN(t, dialect)
	w := worldOn(t, storetest.OpenDSN(t, dsn))
	w.dsn = dsn
	return w
}

// worldOn makes the world on a store of its own.
func worldOn(t *testing.T, st *store.Store) *world {
	ctx := context.Background()
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Olga", OwnerEmail: "olga@example.com",
		AgentName: "Admin"})
	require.NoError(t, err)
	owner, err := st.CreateUser(ctx, boot.Company.UUID, "dan@example.com", "Dan", "member")
	require.NoError(t, err)
	dev, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: boot.Company.UUID, Name: "Dev",
		Roles: []string{"developer_agent"}, OwnerUUID: &owner.UUID})
	require.NoError(t, err)
	caller := store.Caller{CompanyUUID: boot.Company.UUID, AgentUUID: boot.Agent.UUID, OwnerUUID: boot.Owner.UUID}
	p, err := st.CreateProject(ctx, caller, store.NewProject{Name: "Web"})
	require.NoError(t, err)
	return &world{st: st, company: boot.Company.UUID, admin: boot.Agent, dev: *dev, devKey: key, adminKey: boot.Key,
		devOwner: owner.UUID, project: p.UUID}
}

// notify writes one notification from the admin to the dev agent, as a workflow's activity does.
func (w *world) notify(t *testing.T, st *store.Store, seed, action, entity string) {
	err := st.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		return store.InsertNotifications(ctx, tx, w.company, store.NotifySpec{Seed: seed, ProjectUUID: w.project,
			Action: action, EntityType: "task", EntityUUID: entity, EntityTitle: "T", Message: "m", ActorType: "agent",
			ActorUUID: w.admin.UUID, ActorName: "Admin", Recipients: []store.Recipient{{Type: "agent", UUID: w.dev.UUID}}})
	})
	require.NoError(t, err)
}

// server is one API process's event stream over st: its own hub and HTTP server.
func serve(t *testing.T, st *store.Store, cfg stream.Config) (url string, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	hub := st.NewEventHub(slog.New(slog.DiscardHandler))
	hub.PollEvery = 100 * time.Millisecond
	go hub.Run(ctx)
	cfg.App = &app.App{Store: st, Events: hub}
	cfg.Key = func(r *http.Request) (app.Principal, bool, error) {
		k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return app.Principal{}, false, nil
		}
		a, err := st.Authenticate(r.Context(), k)
		if err != nil {
			return app.Principal{}, false, err
		}
		return app.Principal{Caller: store.Caller{CompanyUUID: a.Agent.CompanyUUID, AgentUUID: a.Agent.UUID,
			OwnerUUID: a.Owner.UUID}}, true, nil
	}
	e := echo.New()
	stream.New(cfg).Mount(e)
	srv := httptest.NewServer(e)
	var once bool
	stop = func() {
		if !once {
			once = true
			srv.CloseClientConnections()
			srv.Close()
			cancel()
		}
	}
	t.Cleanup(stop)
	return srv.URL + stream.Path, stop
}

type frame struct {
	ID, Event string
	Data      map[string]string
}

// client is one open stream.
type client struct {
	resp   *http.Response
	frames chan frame
	done   chan struct{}
}

func open(t *testing.T, url, key, lastID string) *client {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	c := &client{resp: resp, frames: make(chan frame, 100), done: make(chan struct{})}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(resp.Body)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Event != "" {
					c.frames <- f
				}
				f = frame{}
			case strings.HasPrefix(line, "id: "):
				f.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				f.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f.Data))
			}
		}
	}()
	return c
}

// next waits for the stream's next event (at most within), failing the test otherwise.
func (c *client) next(t *testing.T, within time.Duration) frame {
	t.Helper()
	select {
	case f := <-c.frames:
		return f
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
	}
	return frame{}
}

// none checks that no event comes within d.
func (c *client) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case f := <-c.frames:
		t.Fatalf("unexpected event %+v", f)
	case <-time.After(d):
	}
}

func eachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { t.Parallel(); f(t, d) })
	}
}

// An event reaches the open stream of its recipient, naming ids and kinds only, with its seq as
// the SSE id; a stream opened without Last-Event-ID starts at the newest event.
func TestStreamSendsTheCallersEvents(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.notify(t, w.st, "before", "task_assigned", "t0") // before the stream: not replayed
		url, _ := serve(t, w.st, stream.Config{})
		c := open(t, url, w.devKey, "")
		w.notify(t, w.st, "s1", "task_assigned", "t1")
		f := c.next(t, 5*time.Second)
		require.Equal(t, "task_assigned", f.Event)
		require.Equal(t, f.ID, f.Data["id"])
		require.Equal(t, "t1", f.Data["entityUuid"])
		require.Equal(t, "task", f.Data["entityType"])
		require.Equal(t, w.project, f.Data["projectUuid"])
		require.Equal(t, w.admin.UUID, f.Data["actorUuid"])
		for k := range f.Data {
			require.Contains(t, []string{"id", "kind", "projectUuid", "entityType", "entityUuid", "ideaUuid", "actorType",
				"actorUuid", "at"}, k, "the event names ids and kinds only")
		}
		// A retried write (same seed) is the same event: nothing more is sent.
		w.notify(t, w.st, "s1", "task_assigned", "t1")
		c.none(t, time.Second)
	})
}

// A client that disconnects and comes back with Last-Event-ID gets what it missed, once and in
// order, also from another API process (its own store and hub) and after the first one stopped.
func TestStreamResumesAcrossDisconnectRestartAndProcesses(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		urlA, stopA := serve(t, w.st, stream.Config{})
		c := open(t, urlA, w.devKey, "")
		w.notify(t, w.st, "e1", "task_assigned", "t1")
		w.notify(t, w.st, "e2", "task_reopened", "t1")
		first, second := c.next(t, 5*time.Second), c.next(t, 5*time.Second)
		require.Equal(t, []string{"task_assigned", "task_reopened"}, []string{first.Event, second.Event})

		stopA() // process A goes away with the client's connection
		<-c.done
		// While the client is away, events are written through yet another connection pool.
		other := storetest.OpenDSN(t, w.dsn)
		for i := 3; i <= 6; i++ {
			w.notify(t, other, fmt.Sprintf("e%d", i), "mentioned", fmt.Sprintf("t%d", i))
		}
		// The client reconnects to process B, which was not running when they were written.
		st2 := storetest.OpenDSN(t, w.dsn)
		urlB, _ := serve(t, st2, stream.Config{})
		c2 := open(t, urlB, w.devKey, second.ID)
		var got []string
		for range 4 {
			got = append(got, c2.next(t, 5*time.Second).Data["entityUuid"])
		}
		require.Equal(t, []string{"t3", "t4", "t5", "t6"}, got, "missed nothing, in order")
		c2.none(t, time.Second) // and nothing twice

		// Live events keep coming on B, written by A's store.
		w.notify(t, w.st, "e7", "task_verified", "t7")
		require.Equal(t, "t7", c2.next(t, 5*time.Second).Data["entityUuid"])
	})
}

// Events of a project the caller can no longer see are not sent; filters narrow by project and
// kind; an unknown kind is refused by name.
func TestStreamHidesAndFilters(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		url, _ := serve(t, w.st, stream.Config{})
		c := open(t, url, w.devKey, "")
		kinds := open(t, url+"?kind=task_verified", w.devKey, "")
		other := open(t, url+"?project="+w.project+"&kind=task_assigned", w.devKey, "")
		w.notify(t, w.st, "h1", "task_assigned", "t1")
		before := c.next(t, 5*time.Second)
		require.Equal(t, "t1", before.Data["entityUuid"])
		require.Equal(t, "t1", other.next(t, 5*time.Second).Data["entityUuid"])
		w.notify(t, w.st, "h1v", "task_verified", "t1")
		require.Equal(t, "task_verified", kinds.next(t, 5*time.Second).Event)
		require.Equal(t, "task_verified", c.next(t, 5*time.Second).Event)
		other.none(t, 500*time.Millisecond)

		// The project turns private; the dev's owner is no member. Its events, the one written
		// while it was public included, are no longer sent.
		_, err := w.st.DB.NewUpdate().Table("projects").Set("visibility = 'private'").Where("uuid = ?", w.project).
			Exec(context.Background())
		require.NoError(t, err)
		again := open(t, url, w.devKey, before.ID)
		w.notify(t, w.st, "h2", "task_reopened", "t1")
		again.none(t, 1500*time.Millisecond)
		c.none(t, 0)

		resp, err := http.Get(url + "?kind=nope")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no credential")
		req, _ := http.NewRequest(http.MethodGet, url+"?kind=task_assigned,nope", nil)
		req.Header.Set("Authorization", "Bearer "+w.devKey)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, string(body), `kind \"nope\" is not an event kind`)
		require.Contains(t, string(body), "task_assigned")
	})
}

// The stream ends when its key is revoked.
func TestStreamEndsWhenTheKeyIsRevoked(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		url, _ := serve(t, w.st, stream.Config{Recheck: 200 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
		c := open(t, url, w.devKey, "")
		_, err := w.st.RevokeKey(context.Background(), w.company, w.devKey)
		require.NoError(t, err)
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Fatal("the stream outlived its revoked key")
		}
	})
}

// A resume point older than the oldest event kept says so first (event: gap).
func TestStreamReportsAGapAfterPruning(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		url, _ := serve(t, w.st, stream.Config{})
		for i := range 3 {
			w.notify(t, w.st, fmt.Sprintf("g%d", i), "mentioned", "t")
		}
		// The hub numbers events too: while it holds the sequencer, SequenceEvents returns at once
		// with what was numbered before, so wait until all three are.
		var top int64
		require.Eventually(t, func() bool {
			n, err := w.st.SequenceEvents(context.Background())
			require.NoError(t, err)
			top = n
			return top >= 3
		}, 10*time.Second, 10*time.Millisecond)
		_, err := w.st.DB.NewDelete().Table("events").Where("seq < ?", top).Exec(context.Background())
		require.NoError(t, err)
		c := open(t, url, w.devKey, "0")
		f := c.next(t, 5*time.Second)
		require.Equal(t, "gap", f.Event)
		require.Equal(t, fmt.Sprint(top), f.Data["oldestId"])
		require.Equal(t, fmt.Sprint(top), c.next(t, 5*time.Second).ID)
	})
}

// scope=project follows every event of one project, whoever it was for (the console's board), for
// a caller who can see the project; it needs exactly one project.
func TestStreamFollowsAProject(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		url, _ := serve(t, w.st, stream.Config{})
		board := open(t, url+"?scope=project&project="+w.project, w.adminKey, "")
		w.notify(t, w.st, "p1", "task_assigned", "t1") // from the admin to the dev: the admin is no recipient
		f := board.next(t, 5*time.Second)
		require.Equal(t, "task_assigned", f.Event)
		require.Equal(t, "t1", f.Data["entityUuid"])

		many := "?project=" + strings.Repeat(w.project+"&project=", 50) + w.project
		for q, want := range map[string]string{"?scope=project": "scope must be mine",
			"?scope=everything&project=" + w.project: "scope must be mine", many: "Too many project or kind values"} {
			req, _ := http.NewRequest(http.MethodGet, url+q, nil)
			req.Header.Set("Authorization", "Bearer "+w.adminKey)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
			require.Contains(t, string(body), want, q)
		}
		// The project turns private: the dev's owner is no member, so the dev cannot follow it.
		_, err := w.st.DB.NewUpdate().Table("projects").Set("visibility = 'private'").Where("uuid = ?", w.project).
			Exec(context.Background())
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, url+"?scope=project&project="+w.project, nil)
		req.Header.Set("Authorization", "Bearer "+w.devKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "answered as a project that does not exist")
		require.Contains(t, string(body), "Project not found")
	})
}

// The database goes away under an open stream: the stream ends (nothing is sent wrong), a
// reconnect meanwhile is refused with 503 and Retry-After, and once the database is back the
// client resumes with Last-Event-ID and misses nothing written before the outage or after it.
func TestStreamSurvivesADatabaseOutage(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st, outage := storetest.OpenFaulty(t, dialect)
		w := worldOn(t, st)
		url, _ := serve(t, st, stream.Config{Recheck: 200 * time.Millisecond, Heartbeat: 200 * time.Millisecond})
		c := open(t, url, w.devKey, "")
		w.notify(t, st, "o1", "task_assigned", "t1")
		first := c.next(t, 5*time.Second)
		w.notify(t, st, "o2", "task_reopened", "t2") // written; maybe not yet sent when the outage starts
		outage.Down()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end during the outage")
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+w.devKey)
		req.Header.Set("Last-Event-ID", first.ID)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "5", resp.Header.Get("Retry-After"))
		outage.Up()
		w.notify(t, st, "o3", "task_verified", "t3")
		again := open(t, url, w.devKey, first.ID)
		var got []string
		for f := range again.frames {
			if f.Event == "task_reopened" || f.Event == "task_verified" {
				got = append(got, f.Data["entityUuid"])
			}
			if len(got) == 2 {
				break
			}
		}
		require.Equal(t, []string{"t2", "t3"}, got)
		again.none(t, 500*time.Millisecond)
	})
}
