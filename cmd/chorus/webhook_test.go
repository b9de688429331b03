package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/webhook"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// chorus webhook add prints the secret once; list never shows it; deliveries and redeliver read
// and queue deliveries; a bad URL, kind or person is refused by name (docs/rules.md §7.5).
func TestWebhookCommands(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	p, err := st.CreateProject(ctx, store.Caller{CompanyUUID: boot.Company.UUID, OwnerUUID: boot.Owner.UUID},
		store.NewProject{Name: "Apollo"})
	require.NoError(t, err)
	data := "--data-dir=" + dir
	fails := func(want string, args ...string) {
		t.Helper()
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{data}, args...))
		require.ErrorContains(t, cmd.ExecuteContext(ctx), want)
	}
	t.Setenv("CHORUS_WEBHOOK_ALLOW", "")
	fails("url: the host \"10.0.0.1\" is a private address", "webhook", "add", "--project", "Apollo", "--url", "http://10.0.0.1/h",
		"--as", "owner@example.com")
	fails(`kinds: "task_done" is not an event kind`, "webhook", "add", "--project", "Apollo", "--url", "http://127.0.0.1:9/h",
		"--kinds", "task_done", "--as", "owner@example.com", "--webhook-allow", "127.0.0.0/8")
	fails("--as is required", "webhook", "list", "--project", "Apollo")
	fails(`--as: no user "nobody@example.com"`, "webhook", "list", "--project", "Apollo", "--as", "nobody@example.com")

	out := runChorus(t, data, "webhook", "add", "--project", "Apollo", "--url", "http://127.0.0.1:9/h", "--kinds",
		"task_assigned,mentioned", "--as", "owner@example.com", "--webhook-allow", "127.0.0.0/8")
	assert.Contains(t, out, `added to project "Apollo": POST http://127.0.0.1:9/h for task_assigned, mentioned.`)
	assert.Contains(t, out, "Keep this secret now: it is shown this once.")
	secret := regexp.MustCompile(`Secret: (whsec_\S+)`).FindStringSubmatch(out)
	require.Len(t, secret, 2)
	hooks, err := st.ProjectWebhooks(ctx, boot.Company.UUID, p.UUID)
	require.NoError(t, err)
	require.Len(t, hooks, 1)
	w := hooks[0]

	list := runChorus(t, data, "webhook", "list", "--project", p.UUID, "--as", "owner@example.com")
	assert.Contains(t, list, w.UUID)
	assert.NotContains(t, list, secret[1])
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(runChorus(t, data, "webhook", "list", "--project", "Apollo", "--as",
		"owner@example.com", "--json")), &listed))
	require.Len(t, listed, 1)
	assert.Equal(t, []any{"task_assigned", "mentioned"}, listed[0]["kinds"])
	assert.NotContains(t, listed[0], "secret")

	require.NoError(t, store.InsertNotifications(ctx, st.DB, boot.Company.UUID, store.NotifySpec{Seed: store.NewUUID(),
		ProjectUUID: p.UUID, Action: "task_assigned", EntityType: "task", EntityUUID: store.NewUUID(), ActorType: "agent",
		ActorUUID: boot.Agent.UUID}))
	_, err = st.SequenceEvents(ctx)
	require.NoError(t, err)
	_, err = st.DispatchWebhookEvents(ctx, 10)
	require.NoError(t, err)
	out = runChorus(t, data, "webhook", "deliveries", w.UUID, "--as", "owner@example.com")
	assert.Regexp(t, `task_assigned\s+pending\s+0`, out)
	ds, err := st.WebhookDeliveries(ctx, w.UUID, "", 10)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	fails("The delivery is pending", "webhook", "redeliver", ds[0].UUID, "--as", "owner@example.com")
	require.NoError(t, st.MarkDeliveryDead(ctx, ds[0].UUID))
	assert.Contains(t, runChorus(t, data, "webhook", "deliveries", w.UUID, "--state", "dead", "--as", "owner@example.com"), ds[0].UUID)
	assert.Contains(t, runChorus(t, data, "webhook", "redeliver", ds[0].UUID, "--as", "owner@example.com"), "is queued again")

	assert.Contains(t, runChorus(t, data, "webhook", "remove", w.UUID, "--as", "owner@example.com"), "removed, with its deliveries")
	fails("Webhook not found", "webhook", "deliveries", w.UUID, "--as", "owner@example.com")
}

// A worker process (runServer) runs the webhook dispatcher beside its worker: an event written
// after a webhook was added reaches its receiver, signed, without anyone asking; the operator's
// --webhook-allow lets it reach a receiver on 127.0.0.1. On SQLite and PostgreSQL.
func TestServerDeliversWebhooks(t *testing.T) {
	tmp := startReadyTemporal(t)
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, dialect)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
				OwnerEmail: "owner@example.com", AgentName: "Admin"})
			require.NoError(t, err)
			p, err := st.CreateProject(ctx, store.Caller{CompanyUUID: boot.Company.UUID, OwnerUUID: boot.Owner.UUID},
				store.NewProject{Name: "Apollo"})
			require.NoError(t, err)
			type got struct {
				id, kind string
				signed   bool
			}
			var secret string
			received := make(chan got, 10)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				w.WriteHeader(http.StatusOK)
				received <- got{id: r.Header.Get(webhook.HeaderID), kind: r.Header.Get(webhook.HeaderEvent),
					signed: webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), body,
						time.Now(), time.Minute)}
			}))
			defer rcv.Close()
			policy, err := webhook.ParseAllow("127.0.0.0/8")
			require.NoError(t, err)
			a := &app.App{Store: st, WebhookPolicy: policy}
			w, secret, err := a.AddWebhook(ctx, app.Request{Who: app.UserPrincipal(&boot.Owner)}, app.NewWebhook{ProjectUUID: p.UUID,
				URL: rcv.URL})
			require.NoError(t, err)

			queue := "webhooks-" + dialect + "-" + store.NewUUID()[:8]
			port, err := devserver.FreePort()
			require.NoError(t, err)
			cfg := serverConfig{role: roleWorker, addr: fmt.Sprintf("127.0.0.1:%d", port),
				temporal: temporalConfig{address: tmp.addr, namespace: workflows.Namespace}, temporalWait: 30 * time.Second,
				taskQueue: queue, webhooks: webhooksConfig{allow: "127.0.0.0/8"}}
			srvCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- runServer(srvCtx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, cfg, nil) }()
			defer func() { cancel(); <-done }()

			require.NoError(t, store.InsertNotifications(ctx, st.DB, boot.Company.UUID, store.NotifySpec{Seed: store.NewUUID(),
				ProjectUUID: p.UUID, Action: "task_verified", EntityType: "task", EntityUUID: store.NewUUID(), ActorType: "agent",
				ActorUUID: boot.Agent.UUID}))
			select {
			case g := <-received:
				ds, err := st.WebhookDeliveries(ctx, w.UUID, "", 10)
				require.NoError(t, err)
				require.Len(t, ds, 1)
				assert.Equal(t, ds[0].UUID, g.id)
				assert.Equal(t, "task_verified", g.kind)
				assert.True(t, g.signed)
			case <-time.After(time.Minute): // a deadline: the delivery comes within seconds
				t.Fatal("the receiver got nothing within a minute")
			}
		})
	}
}
