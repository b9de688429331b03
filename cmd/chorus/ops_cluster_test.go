package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// A database belongs to the Temporal its first start reached: chorus ops check, repair, failed
// and replay pointed at another deployment's Temporal (here a second dev server) refuse, naming
// both, before they read a workflow; pointed at its own, found through the address the dev stack
// recorded in the data dir, they run. A server started against the other refuses likewise, and
// `chorus ops bind --replace` records a deliberate move.
func TestOpsRefusesAForeignCluster(t *testing.T) {
	own, other := startReadyTemporal(t), startReadyTemporal(t)
	ctx := context.Background()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			g := &globals{dataDir: t.TempDir()}
			if dialect == "pg" {
				dsn := storetest.NewDSN(t, dialect)
				storetest.OpenDSN(t, dsn) // migrated
				t.Setenv("CHORUS_DATABASE_URL", dsn)
			}
			st, err := g.openStore(ctx)
			require.NoError(t, err)
			defer st.Close()
			// The first start (what chorus serve and chorus dev do) records its Temporal, and the
			// dev stack its address in the data dir.
			b, err := ops.BindCluster(ctx, st, own.tc, workflows.Namespace, own.addr)
			require.NoError(t, err)
			require.NotNil(t, b)
			require.NotEmpty(t, b.NamespaceID)
			require.NoError(t, devserver.WriteAddressFile(g.dataDir, own.addr, workflows.Namespace))

			o := opsOptions{temporal: temporalConfig{namespace: workflows.Namespace}, taskQueue: workflows.TaskQueue}
			x, closeAll, err := o.open(ctx, g)
			require.NoError(t, err, "its own Temporal, found through the data dir")
			_, err = x.CheckReport(ctx, "")
			require.NoError(t, err)
			closeAll()

			foreign, err := workflows.IdentifyCluster(ctx, other.tc, workflows.Namespace)
			require.NoError(t, err)
			o.temporal.address = other.addr
			for name, open := range map[string]func() error{
				"check and repair":  func() error { _, c, err := o.open(ctx, g); closeIf(c); return err },
				"failed and replay": func() error { _, c, err := o.openTemporal(ctx, g); closeIf(c); return err },
			} {
				err := open()
				require.ErrorIs(t, err, ops.ErrForeignCluster, name)
				require.Contains(t, err.Error(), b.NamespaceID, "%s names the database's Temporal", name)
				require.Contains(t, err.Error(), foreign.NamespaceID, "%s names the one it reached", name)
				require.Contains(t, err.Error(), "chorus ops bind --replace")
			}
			_, err = ops.BindCluster(ctx, st, other.tc, workflows.Namespace, other.addr)
			require.ErrorIs(t, err, ops.ErrForeignCluster, "a server started against the other refuses too")

			// A deliberate move is recorded, and ops then runs against the new Temporal.
			var out bytes.Buffer
			cmd := newOpsBindCmd(g)
			cmd.SetOut(&out)
			cmd.SetArgs([]string{"--replace", "--temporal-address", other.addr})
			require.NoError(t, cmd.ExecuteContext(ctx))
			require.Contains(t, out.String(), "was: Temporal")
			require.Contains(t, out.String(), foreign.NamespaceID)
			_, c, err := o.open(ctx, g)
			require.NoError(t, err)
			c()
		})
	}
}

func closeIf(c func()) {
	if c != nil {
		c()
	}
}

// After a repair, a finding that repair could not resolve is listed with why and what to do,
// not offered to repair again (which would change nothing); the others are.
func TestReportRepaired(t *testing.T) {
	foreign := ops.Finding{WorkflowID: "task/t1", Kind: ops.MissingRow, Detail: "the workflow holds the entity but its row is missing"}
	diverged := ops.Finding{WorkflowID: "idea/i1", Kind: ops.Diverged, Detail: "differs in status"}
	why := errors.Join(ops.ErrCannotRepair, errors.New("task/t1 holds a task of project p9, which is not in this database; terminate it"))
	var out bytes.Buffer
	require.Equal(t, exitError{code: 1}, reportRepaired([]ops.Finding{foreign}, map[string]error{findingKey(foreign): why}, &out))
	require.Contains(t, out.String(), "not repaired: cannot repair")
	require.Contains(t, out.String(), "terminate it")
	require.NotContains(t, out.String(), "chorus ops repair --all")
	out.Reset()
	require.Equal(t, exitError{code: 1}, reportRepaired([]ops.Finding{foreign, diverged}, map[string]error{findingKey(foreign): why}, &out))
	require.Contains(t, out.String(), "Repair them with: chorus ops repair --all", "a finding that appeared meanwhile may be repaired")
	out.Reset()
	require.NoError(t, reportRepaired(nil, nil, &out))
	require.Contains(t, out.String(), "clean")
}
