package activities

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/webhook"
)

// A failed attempt's error, recorded on the delivery (shown to the project's admins), logged by
// the worker and kept in the workflow's history, says what went wrong without the URL: a
// receiver's URL often carries a token of its own (?token=..., or a path secret as chat services
// give), and an error naming it would spread the token to every log and history reader.
func TestDeliveryErrorLeavesTheURLOut(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, dialect)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Olga",
				OwnerEmail: "olga@example.com", AgentName: "ops"})
			require.NoError(t, err)
			caller := store.Caller{CompanyUUID: boot.Company.UUID, AgentUUID: boot.Owner.UUID, OwnerUUID: boot.Owner.UUID,
				ActorType: "user"}
			p, err := st.CreateProject(ctx, caller, store.NewProject{Name: "Apollo"})
			require.NoError(t, err)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close()) // nobody answers there: connection refused
			hook := &store.Webhook{UUID: store.NewUUID(), CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID,
				URL: "http://" + addr + "/services/T0PATHSECRET/hook?token=QUERYSECRET", Secret: webhook.NewSecret(),
				CreatedByType: "user", CreatedByUUID: boot.Owner.UUID}
			require.NoError(t, st.CreateWebhook(ctx, hook))
			require.NoError(t, store.InsertNotifications(ctx, st.DB, boot.Company.UUID, store.NotifySpec{Seed: "s",
				ProjectUUID: p.UUID, Action: "task_assigned", EntityType: "task", EntityUUID: store.NewUUID(), ActorType: "user",
				ActorUUID: boot.Owner.UUID}))
			_, err = st.SequenceEvents(ctx)
			require.NoError(t, err)
			_, err = st.DispatchWebhookEvents(ctx, 10)
			require.NoError(t, err)
			ds, err := st.UndispatchedDeliveries(ctx, 10, time.Now())
			require.NoError(t, err)
			require.Len(t, ds, 1)

			allow, err := webhook.ParseAllow("127.0.0.0/8")
			require.NoError(t, err)
			a := &Activities{Store: st, WebhookPolicy: allow}
			env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
			env.RegisterActivity(a.DeliverWebhook)
			_, err = env.ExecuteActivity(a.DeliverWebhook, DeliverWebhookInput{DeliveryUUID: ds[0].UUID})
			require.Error(t, err)
			require.NotContains(t, err.Error(), "SECRET")
			d, err := st.WebhookDeliveryByUUID(ctx, ds[0].UUID)
			require.NoError(t, err)
			require.Contains(t, d.LastError, "no answer: ")
			require.Contains(t, d.LastError, "connection refused")
			require.NotContains(t, d.LastError, "SECRET")
		})
	}
}
