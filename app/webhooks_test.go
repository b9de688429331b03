package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/webhook"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// hookEnv is a company on a store of one dialect: its owner (admin of every project), Ann (a
// member: editor of public projects), two projects, and an app whose policy allows loopback
// (the receivers of these tests listen on 127.0.0.1).
type hookEnv struct {
	st           *store.Store
	app          *App
	company      string
	admin, ann   Request
	proj, other  *store.Project
	allowLoopack webhook.Policy
}

func newHookEnv(t *testing.T, dialect string) *hookEnv {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, dialect)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Olga", OwnerEmail: "olga@example.com",
		AgentName: "ops"})
	require.NoError(t, err)
	ann, err := st.CreateUser(ctx, boot.Company.UUID, "ann@example.com", "Ann", store.RoleMember)
	require.NoError(t, err)
	admin := Request{Who: UserPrincipal(&boot.Owner)}
	proj, err := st.CreateProject(ctx, admin.Who.Caller, store.NewProject{Name: "Apollo"})
	require.NoError(t, err)
	other, err := st.CreateProject(ctx, admin.Who.Caller, store.NewProject{Name: "Gemini"})
	require.NoError(t, err)
	allow, err := webhook.ParseAllow("127.0.0.0/8")
	require.NoError(t, err)
	return &hookEnv{st: st, app: &App{Store: st, WebhookPolicy: allow}, company: boot.Company.UUID, admin: admin,
		ann: Request{Who: UserPrincipal(ann)}, proj: proj, other: other, allowLoopack: allow}
}

// event writes one numbered event of kind in project, as a notification does.
func (e *hookEnv) event(t *testing.T, projectUUID, kind string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, store.InsertNotifications(ctx, e.st.DB, e.company, store.NotifySpec{Seed: store.NewUUID(),
		ProjectUUID: projectUUID, Action: kind, EntityType: "task", EntityUUID: store.NewUUID(), ActorType: "user",
		ActorUUID: e.admin.Who.Caller.AgentUUID}))
	_, err := e.st.SequenceEvents(ctx)
	require.NoError(t, err)
}

// Only a project admin manages webhooks; a URL to an internal address is refused at add time
// with a message naming url and the fix; kinds are checked; the secret is given once.
func TestWebhookUseCases(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newHookEnv(t, dialect)
			strict := &App{Store: e.st}

			_, _, err := e.app.AddWebhook(ctx, e.ann, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/"})
			assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg, "an editor is not enough")
			for _, url := range []string{"http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/",
				"http://localhost:8080/"} {
				_, _, err := strict.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: url})
				r := refused(t, err)
				assert.Equal(t, vocab.RefusedInvalid, r.Kind, url)
				assert.Contains(t, r.Msg, "url: the host", url)
				assert.Contains(t, r.Msg, "CHORUS_WEBHOOK_ALLOW", url)
			}
			_, _, err = e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/",
				Kinds: []string{"task_assigned", "task_done"}})
			assert.Contains(t, refused(t, err).Msg, `kinds: "task_done" is not an event kind`)
			_, _, err = e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://u:p@127.0.0.1:9/"})
			assert.Contains(t, refused(t, err).Msg, "url: the URL carries a user name or password")

			w, secret, err := e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/in",
				Kinds: []string{"comment_added", " task_assigned", "task_assigned"}})
			require.NoError(t, err)
			assert.Regexp(t, `^whsec_[A-Za-z0-9_-]{43}$`, secret)
			assert.Equal(t, []string{"task_assigned", "comment_added"}, w.KindList())
			list, err := e.app.ListWebhooks(ctx, e.admin, e.proj.UUID)
			require.NoError(t, err)
			require.Len(t, list, 1)
			out, err := json.Marshal(list)
			require.NoError(t, err)
			assert.NotContains(t, string(out), secret, "a listing never carries the secret")
			_, err = e.app.ListWebhooks(ctx, e.ann, e.proj.UUID)
			assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)
			_, _, err = e.app.ListDeliveries(ctx, e.ann, w.UUID, "")
			assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)
			_, _, err = e.app.ListDeliveries(ctx, e.admin, w.UUID, "lost")
			assert.Contains(t, refused(t, err).Msg, `state: "lost" is not a delivery state`)
			_, err = e.app.RemoveWebhook(ctx, e.ann, w.UUID)
			assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)
			retry := e.admin
			retry.RequestID = "add-once"
			first, secret1, err := e.app.AddWebhook(ctx, retry, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/twice"})
			require.NoError(t, err)
			require.NotEmpty(t, secret1)
			again, secret2, err := e.app.AddWebhook(ctx, retry, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/twice"})
			require.NoError(t, err)
			assert.Equal(t, first.UUID, again.UUID, "a retried add returns the first one's webhook")
			assert.Empty(t, secret2, "and not its secret again")
			_, err = e.app.RemoveWebhook(ctx, e.admin, first.UUID)
			require.NoError(t, err)
			_, err = e.app.RemoveWebhook(ctx, e.admin, w.UUID)
			require.NoError(t, err)
			_, err = e.app.RemoveWebhook(ctx, e.admin, w.UUID)
			assert.Equal(t, "Webhook not found", refused(t, err).Msg)
		})
	}
}

// The dispatcher makes one delivery per event and matching webhook: not for another project's
// events, nor for kinds the webhook did not ask for, nor for events before the webhook was
// added; a second pass adds nothing.
func TestWebhookDispatch(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newHookEnv(t, dialect)
			e.event(t, e.proj.UUID, "task_assigned") // before any webhook
			n, err := e.st.DispatchWebhookEvents(ctx, 100)
			require.NoError(t, err)
			assert.Equal(t, 0, n, "no webhook: the cursor skips ahead")

			all, _, err := e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/all"})
			require.NoError(t, err)
			e.event(t, e.proj.UUID, "comment_added")
			only, _, err := e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/only",
				Kinds: []string{"task_verified"}})
			require.NoError(t, err)
			e.event(t, e.proj.UUID, "task_verified")
			e.event(t, e.proj.UUID, "mentioned")
			e.event(t, e.other.UUID, "task_verified")
			for range 2 {
				_, err = e.st.DispatchWebhookEvents(ctx, 100)
				require.NoError(t, err)
			}
			kinds := func(w *store.Webhook) []string {
				_, ds, err := e.app.ListDeliveries(ctx, e.admin, w.UUID, "")
				require.NoError(t, err)
				var out []string
				for _, d := range ds {
					out = append(out, d.Kind)
					assert.Equal(t, store.DeliveryPending, d.State)
					assert.Equal(t, store.DeliveryUUID(w.UUID, d.EventUUID), d.UUID)
					var body map[string]any
					require.NoError(t, json.Unmarshal([]byte(d.Body), &body))
					assert.Equal(t, d.UUID, body["id"])
					assert.Equal(t, e.proj.UUID, body["projectUuid"])
					assert.Equal(t, w.UUID, body["webhookUuid"])
					assert.Equal(t, d.Kind, body["event"].(map[string]any)["kind"])
				}
				return out
			}
			assert.Equal(t, []string{"mentioned", "task_verified", "comment_added"}, kinds(all),
				"newest first; not the event before it, nor the other project's")
			assert.Equal(t, []string{"task_verified"}, kinds(only))
			undispatched, err := e.st.UndispatchedDeliveries(ctx, 100, time.Now())
			require.NoError(t, err)
			assert.Len(t, undispatched, 4)

			// Dispatchers of several workers at once turn each event into one delivery.
			for range 30 {
				e.event(t, e.proj.UUID, "mentioned")
			}
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					for {
						n, err := e.st.DispatchWebhookEvents(ctx, 7)
						if !assert.NoError(t, err) || n == 0 {
							return
						}
					}
				})
			}
			wg.Wait()
			_, err = e.st.DispatchWebhookEvents(ctx, 100) // whatever a dispatcher that found the lock taken left
			require.NoError(t, err)
			assert.Len(t, kinds(all), 33)
		})
	}
}

// receiver is a webhook receiver on 127.0.0.1 that answers fail times 500, then 204, and
// checks each request's signature; each request is sent on got.
type receiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	fail   int
	got    chan delivered
}

type delivered struct {
	id, kind string
	body     []byte
	signed   bool
	status   int
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{fail: fail, got: make(chan delivered, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusNoContent
		if r.fail > 0 {
			r.fail--
			status = http.StatusInternalServerError
		}
		signed := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderTimestamp), req.Header.Get(webhook.HeaderSignature), body,
			time.Now(), 5*time.Minute) && req.Header.Get("User-Agent") == webhook.UserAgent &&
			req.Header.Get("Content-Type") == "application/json"
		r.mu.Unlock()
		w.WriteHeader(status)
		r.got <- delivered{id: req.Header.Get(webhook.HeaderID), kind: req.Header.Get(webhook.HeaderEvent), body: body,
			signed: signed, status: status}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) next(t *testing.T) delivered {
	t.Helper()
	select {
	case d := <-r.got:
		return d
	case <-time.After(time.Minute): // a deadline, not a wait: the attempts come within seconds
		t.Fatal("no delivery attempt within a minute")
		return delivered{}
	}
}

// flowEnv adds Temporal: a task queue of this test, a worker factory and a dispatcher.
type flowEnv struct {
	*hookEnv
	tc    client.Client
	queue string
	disp  *workflows.WebhookDispatcher
}

func newFlowHookEnv(t *testing.T, dialect string, b activities.WebhookBackoff) *flowEnv {
	e := newHookEnv(t, dialect)
	tc := wftest.Server(t).Client()
	queue := "webhooks-" + store.NewUUID()
	return &flowEnv{hookEnv: e, tc: tc, queue: queue,
		disp: &workflows.WebhookDispatcher{Store: e.st, Temporal: tc, TaskQueue: queue, Backoff: b}}
}

func (f *flowEnv) worker(t *testing.T) worker.Worker {
	acts := activities.New(f.st, f.tc)
	acts.WebhookPolicy = f.allowLoopack
	w := workflows.NewWorker(f.tc, f.queue, acts, worker.Options{WorkerStopTimeout: 10 * time.Second})
	require.NoError(t, w.Start())
	return w
}

// wait blocks until the delivery's workflow (its latest run) ends, and returns the row.
func (f *flowEnv) wait(t *testing.T, deliveryUUID string) *store.WebhookDelivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, f.tc.GetWorkflow(ctx, workflows.WebhookDeliveryID(deliveryUUID), "").Get(ctx, nil))
	d, err := f.st.WebhookDeliveryByUUID(ctx, deliveryUUID)
	require.NoError(t, err)
	return d
}

// A receiver that fails three times gets the delivery on the fourth try, with a valid signature
// and the same idempotency id each time, even though the worker is stopped after the second
// attempt and another one takes over.
func TestWebhookRetriesAcrossWorkers(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowHookEnv(t, dialect, activities.WebhookBackoff{Initial: time.Second, Max: 2 * time.Second, Total: 5 * time.Minute})
			rcv := newReceiver(t, 3)
			w, secret, err := f.app.AddWebhook(ctx, f.admin, NewWebhook{ProjectUUID: f.proj.UUID, URL: rcv.URL + "/hook"})
			require.NoError(t, err)
			rcv.secret = secret
			f.event(t, f.proj.UUID, "task_assigned")
			first := f.worker(t)
			require.NoError(t, f.disp.Pass(ctx))
			_, ds, err := f.app.ListDeliveries(ctx, f.admin, w.UUID, "")
			require.NoError(t, err)
			require.Len(t, ds, 1)
			id := ds[0].UUID

			var seen []delivered
			seen = append(seen, rcv.next(t), rcv.next(t))
			first.Stop() // the worker goes away between attempts (it finishes the one it has)
			second := f.worker(t)
			defer second.Stop()
			seen = append(seen, rcv.next(t), rcv.next(t))
			d := f.wait(t, id)
			for i, s := range seen {
				assert.Equal(t, id, s.id, "attempt %d carries the idempotency id", i+1)
				assert.Equal(t, "task_assigned", s.kind)
				assert.True(t, s.signed, "attempt %d is signed with the secret", i+1)
				assert.JSONEq(t, d.Body, string(s.body))
			}
			assert.Equal(t, []int{500, 500, 500, 204}, []int{seen[0].status, seen[1].status, seen[2].status, seen[3].status})
			assert.Equal(t, store.DeliveryDelivered, d.State)
			assert.Equal(t, 4, d.Attempts)
			assert.Equal(t, 204, d.LastStatusCode)
			assert.NotNil(t, d.DeliveredAt)
			assert.Equal(t, workflows.WebhookDeliveryID(id), d.WorkflowID)
			select {
			case extra := <-rcv.got:
				t.Fatalf("a fifth request after delivery: %+v", extra)
			default:
			}
		})
	}
}

// A delivery that keeps failing ends dead when its retries run out; redelivering it starts a new
// run with the same idempotency id, which delivers it. One still under way cannot be redelivered.
func TestWebhookDeadThenRedelivered(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowHookEnv(t, dialect, activities.WebhookBackoff{Initial: 200 * time.Millisecond, Max: 400 * time.Millisecond,
				Total: 2 * time.Second})
			rcv := newReceiver(t, 1_000_000)
			w, secret, err := f.app.AddWebhook(ctx, f.admin, NewWebhook{ProjectUUID: f.proj.UUID, URL: rcv.URL})
			require.NoError(t, err)
			rcv.secret = secret
			f.event(t, f.proj.UUID, "proposal_rejected")
			wk := f.worker(t)
			defer wk.Stop()
			require.NoError(t, f.disp.Pass(ctx))
			_, ds, err := f.app.ListDeliveries(ctx, f.admin, w.UUID, store.DeliveryDelivering)
			require.NoError(t, err)
			require.Len(t, ds, 1)
			id := ds[0].UUID
			_, err = f.app.Redeliver(ctx, f.admin, id)
			assert.Contains(t, refused(t, err).Msg, "The delivery is delivering")

			d := f.wait(t, id)
			assert.Equal(t, store.DeliveryDead, d.State)
			assert.GreaterOrEqual(t, d.Attempts, 2)
			assert.Equal(t, 500, d.LastStatusCode)
			assert.Contains(t, d.LastError, "the receiver answered 500")
			assert.LessOrEqual(t, len(d.LastError), store.MaxDeliveryErrorBytes+len("…"))
			_, dead, err := f.app.ListDeliveries(ctx, f.admin, w.UUID, store.DeliveryDead)
			require.NoError(t, err)
			require.Len(t, dead, 1)

			rcv.mu.Lock()
			rcv.fail = 0
			rcv.mu.Unlock()
			for len(rcv.got) > 0 {
				<-rcv.got
			}
			_, err = f.app.Redeliver(ctx, f.ann, id)
			assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)
			q, err := f.app.Redeliver(ctx, f.admin, id)
			require.NoError(t, err)
			assert.Equal(t, store.DeliveryPending, q.State)
			require.NoError(t, f.disp.Pass(ctx))
			got := rcv.next(t)
			assert.Equal(t, id, got.id, "the same idempotency id")
			assert.True(t, got.signed)
			d = f.wait(t, id)
			assert.Equal(t, store.DeliveryDelivered, d.State)
		})
	}
}

// A project holds at most store.MaxProjectWebhooks webhooks: each event makes one delivery per
// webhook, each attempt holding a worker's activity slot for up to 10 s, so a project admin
// adding webhooks without end (to a receiver that never answers) would starve every other
// workflow of the deployment. The one over is refused, saying why and what to do; removing one
// makes room; another project has its own count.
func TestWebhooksPerProjectAreCapped(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newHookEnv(t, dialect)
			var first *store.Webhook
			for i := range store.MaxProjectWebhooks {
				w, _, err := e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/" + string(rune('a'+i))})
				require.NoError(t, err, i)
				if first == nil {
					first = w
				}
			}
			_, _, err := e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/over"})
			r := refused(t, err)
			assert.Equal(t, vocab.RefusedPrecondition, r.Kind)
			assert.Equal(t, "The project already has 20 webhooks, the most a project may have; remove one it no longer needs "+
				"(one webhook can receive every event kind)", r.Msg)
			list, err := e.app.ListWebhooks(ctx, e.admin, e.proj.UUID)
			require.NoError(t, err)
			assert.Len(t, list, store.MaxProjectWebhooks, "nothing was added")
			_, _, err = e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.other.UUID, URL: "http://127.0.0.1:9/other"})
			require.NoError(t, err, "another project has its own count")
			_, err = e.app.RemoveWebhook(ctx, e.admin, first.UUID)
			require.NoError(t, err)
			_, _, err = e.app.AddWebhook(ctx, e.admin, NewWebhook{ProjectUUID: e.proj.UUID, URL: "http://127.0.0.1:9/room"})
			require.NoError(t, err, "removing one makes room")
		})
	}
}

// A delivery's first attempt is the dispatcher's own: one that succeeds costs no workflow; one
// that fails goes to its workflow, which retries after the backoff's pause; and a first attempt
// whose dispatcher stopped half way (its claim left behind) is taken over by a workflow once stale.
func TestWebhookFirstAttemptNeedsNoWorkflow(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowHookEnv(t, dialect, activities.WebhookBackoff{Initial: time.Second, Max: 2 * time.Second, Total: 5 * time.Minute})
			sender := activities.New(f.st, f.tc)
			sender.WebhookPolicy = f.allowLoopack
			f.disp.Sender = sender
			rcv := newReceiver(t, 0)
			w, secret, err := f.app.AddWebhook(ctx, f.admin, NewWebhook{ProjectUUID: f.proj.UUID, URL: rcv.URL})
			require.NoError(t, err)
			rcv.secret = secret
			row := func(id string) *store.WebhookDelivery {
				d, err := f.st.WebhookDeliveryByUUID(ctx, id)
				require.NoError(t, err)
				return d
			}
			only := func(kind string) string {
				_, ds, err := f.app.ListDeliveries(ctx, f.admin, w.UUID, "")
				require.NoError(t, err)
				for _, d := range ds {
					if d.Kind == kind {
						return d.UUID
					}
				}
				t.Fatalf("no delivery of %s", kind)
				return ""
			}

			// Delivered at the first attempt: no workflow at all.
			f.event(t, f.proj.UUID, "task_assigned")
			require.NoError(t, f.disp.Pass(ctx))
			got := rcv.next(t)
			assert.True(t, got.signed)
			id := only("task_assigned")
			assert.Equal(t, id, got.id)
			require.Eventually(t, func() bool { return row(id).State == store.DeliveryDelivered }, time.Minute, 20*time.Millisecond)
			assert.Equal(t, 1, row(id).Attempts)
			_, err = f.tc.DescribeWorkflowExecution(ctx, workflows.WebhookDeliveryID(id), "")
			var nf *serviceerror.NotFound
			assert.ErrorAs(t, err, &nf, "a delivery delivered at once has no workflow")

			// Failed at the first attempt: its workflow retries it after the pause.
			rcv.mu.Lock()
			rcv.fail = 1
			rcv.mu.Unlock()
			wk := f.worker(t)
			defer wk.Stop()
			f.event(t, f.proj.UUID, "task_verified")
			require.NoError(t, f.disp.Pass(ctx))
			first, second := rcv.next(t), rcv.next(t)
			assert.Equal(t, []int{500, 204}, []int{first.status, second.status})
			id = only("task_verified")
			assert.Equal(t, id, second.id, "the same idempotency id")
			require.Eventually(t, func() bool { return row(id).WorkflowID == workflows.WebhookDeliveryID(id) }, time.Minute,
				20*time.Millisecond)
			d := f.wait(t, id)
			assert.Equal(t, store.DeliveryDelivered, d.State)
			assert.Equal(t, 2, d.Attempts)

			// A dispatcher claimed a first attempt and stopped: once stale, a workflow takes it.
			f.event(t, f.proj.UUID, "mentioned")
			_, err = f.st.DispatchWebhookEvents(ctx, 10)
			require.NoError(t, err)
			id = only("mentioned")
			claimed, err := f.st.ClaimFirstAttempt(ctx, id)
			require.NoError(t, err)
			require.True(t, claimed)
			require.NoError(t, f.disp.Pass(ctx))
			assert.Equal(t, store.InlineAttempt, row(id).WorkflowID, "a fresh claim is left to its dispatcher")
			_, err = f.st.DB.NewUpdate().Table("webhook_deliveries").Set("updated_at = ?", time.Now().Add(-time.Hour)).
				Where("uuid = ?", id).Exec(ctx)
			require.NoError(t, err)
			require.NoError(t, f.disp.Pass(ctx))
			assert.Equal(t, id, rcv.next(t).id)
			d = f.wait(t, id)
			assert.Equal(t, store.DeliveryDelivered, d.State)
			assert.Equal(t, workflows.WebhookDeliveryID(id), d.WorkflowID)
		})
	}
}
