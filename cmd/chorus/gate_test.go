package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// chorus project gates shows and sets a project's gate policy, refusing a bad field by name, and
// chorus gate list lists the company's gates (docs/rules.md §6.7).
func TestProjectGatesAndGateList(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	p, err := st.CreateProject(ctx, store.Caller{CompanyUUID: boot.Company.UUID, OwnerUUID: boot.Owner.UUID},
		store.NewProject{Name: "Vault", Visibility: "private"})
	require.NoError(t, err)
	data := "--data-dir=" + dir

	out := runChorus(t, data, "project", "gates", p.UUID)
	require.Contains(t, out, "gated commands: -; requests expire: never; separation of duties: false")
	out = runChorus(t, data, "project", "gates", "Vault", "--require", "verify_task,approve_proposal", "--expire-after", "24h",
		"--separate-duties")
	require.Contains(t, out, "gated commands: approve_proposal, verify_task; requests expire: after 24h0m0s; separation of duties: true")
	pol, err := st.GatePolicyOf(ctx, p.UUID)
	require.NoError(t, err)
	require.Equal(t, 24*3600, pol.ExpireAfterSeconds)

	cmd := newRootCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{data, "project", "gates", p.UUID, "--require", "approve"})
	require.ErrorContains(t, cmd.ExecuteContext(ctx), `commands: "approve" is not a gateable command`)

	now := store.Now()
	require.NoError(t, st.RecordGate(ctx, store.GateRequest{UUID: store.NewUUID(), CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID,
		EntityType: "task", EntityUUID: store.NewUUID(), EntityTitle: "Ship it", Command: "verify_task", RequestedByType: "agent",
		RequestedByUUID: store.NewUUID(), RequestedByName: "Reviewer", Status: "awaiting", ExpiresAt: new(now.Add(time.Hour)),
		CreatedAt: now, UpdatedAt: now}, store.NotifySpec{}))
	out = runChorus(t, data, "gate", "list", "--status", "awaiting")
	require.Contains(t, out, `verify_task  task "Ship it"  Reviewer`)
	require.NotContains(t, runChorus(t, data, "gate", "list", "--status", "applied"), "Ship it")

	var refuse bytes.Buffer
	cmd = newRootCmd()
	cmd.SetOut(&refuse)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{data, "gate", "refuse", store.NewUUID(), "--as", "owner@example.com"})
	require.ErrorContains(t, cmd.ExecuteContext(ctx), "--note is required to refuse")
}
