package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// Every test here runs against SQLite and PostgreSQL: one suite, two implementations.
func eachDialect(t *testing.T, f func(t *testing.T, st *store.Store)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { f(t, storetest.Open(t, d)) })
	}
}

var boot = store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner", OwnerEmail: "owner@example.com", AgentName: "Admin"}

func TestBootstrapRunsOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		first, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		require.True(t, first.Created)
		require.NoError(t, store.ValidateKeyFormat(first.Key))

		again, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Other", Key: store.GenerateKey()})
		require.NoError(t, err)
		require.False(t, again.Created)
		require.Empty(t, again.Key)
		require.Equal(t, first.Company.UUID, again.Company.UUID)
		require.Equal(t, first.Agent.UUID, again.Agent.UUID)
		require.Equal(t, first.Owner.UUID, again.Owner.UUID)

		a, err := st.Authenticate(ctx, first.Key)
		require.NoError(t, err)
		require.Equal(t, first.Agent.UUID, a.Agent.UUID)
		require.Equal(t, []string{"admin_agent"}, a.Agent.Roles)
		require.NotNil(t, a.Owner)
	})
}

func TestBootstrapRejectsWeakKeys(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	for _, k := range []string{"cho_short", "sk_" + store.GenerateKey()[4:], "cho_" + string(make([]byte, 50))} {
		_, err := st.EnsureBootstrap(context.Background(), store.Bootstrap{CompanyName: "A", Key: k})
		require.Error(t, err, k)
	}
	_, err := st.DefaultCompany(context.Background())
	require.NoError(t, err) // a failed bootstrap wrote nothing, so the default company is made fresh
}

func TestKeysLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		a, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: b.Company.UUID, Name: "dev", Roles: []string{"developer_agent"}})
		require.NoError(t, err)

		// Only the hash is stored.
		var stored store.APIKey
		require.NoError(t, st.DB.NewSelect().Model(&stored).Where("agent_uuid = ?", a.UUID).Scan(ctx))
		require.Equal(t, store.HashKey(key), stored.KeyHash)
		require.NotContains(t, stored.KeyHash, key[4:])

		// A second key; revoking by prefix and by uuid.
		k2, plain2, err := st.CreateKey(ctx, b.Company.UUID, a.UUID, "ci", nil)
		require.NoError(t, err)
		_, err = st.RevokeKey(ctx, b.Company.UUID, store.DisplayPrefix(key))
		require.NoError(t, err)
		_, err = st.Authenticate(ctx, key)
		require.ErrorIs(t, err, store.ErrKeyRevoked)
		_, err = st.Authenticate(ctx, plain2)
		require.NoError(t, err)
		_, err = st.RevokeKey(ctx, b.Company.UUID, k2.UUID)
		require.NoError(t, err)
		_, err = st.Authenticate(ctx, plain2)
		require.ErrorIs(t, err, store.ErrKeyRevoked)

		_, err = st.RevokeKey(ctx, b.Company.UUID, "cho_nothing")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = st.Authenticate(ctx, store.GenerateKey())
		require.ErrorIs(t, err, store.ErrKeyUnknown)

		past := time.Now().Add(-time.Minute)
		_, plain3, err := st.CreateKey(ctx, b.Company.UUID, a.UUID, "old", &past)
		require.NoError(t, err)
		_, err = st.Authenticate(ctx, plain3)
		require.ErrorIs(t, err, store.ErrKeyExpired)

		agents, err := st.ListAgents(ctx, b.Company.UUID)
		require.NoError(t, err)
		require.Len(t, agents, 2)
		require.Equal(t, 0, agents[1].ActiveKeys)
	})
}

func TestProjectAccessLevels(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		owner := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID}
		stranger, err := st.EnsureUser(ctx, b.Company.UUID, "s@example.com", "S")
		require.NoError(t, err)
		other := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: store.NewUUID(), OwnerUUID: stranger.UUID}
		ownerless := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: store.NewUUID()}

		pub, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Pub"})
		require.NoError(t, err)
		priv, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Priv", Visibility: "private"})
		require.NoError(t, err)

		v, err := st.GetProject(ctx, owner, priv.UUID)
		require.NoError(t, err)
		require.Equal(t, store.AccessAdmin, v.Level())
		v, err = st.GetProject(ctx, other, pub.UUID)
		require.NoError(t, err)
		require.Equal(t, store.AccessEditor, v.Level(), "public projects make everyone an editor")
		_, err = st.GetProject(ctx, other, priv.UUID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = st.GetProject(ctx, ownerless, priv.UUID)
		require.ErrorIs(t, err, store.ErrNotFound)

		// A viewer membership makes a private project visible, but not editable.
		require.NoError(t, insertMember(ctx, st, b.Company.UUID, priv.UUID, stranger.UUID, "viewer"))
		v, err = st.GetProject(ctx, other, priv.UUID)
		require.NoError(t, err)
		require.Equal(t, store.AccessViewer, v.Level())
		_, err = st.RequireProject(ctx, other, priv.UUID, store.AccessEditor)
		require.ErrorIs(t, err, store.ErrForbidden)

		rows, total, err := st.ListProjects(ctx, ownerless, 20, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, pub.UUID, rows[0].UUID)

		_, err = st.CreateProject(ctx, owner, store.NewProject{Name: "X", GroupUUID: ptr(store.NewUUID())})
		var nf *store.NotFoundError
		require.True(t, errors.As(err, &nf))
		require.Equal(t, "Project group not found", nf.Error())
	})
}

func insertMember(ctx context.Context, st *store.Store, company, project, user, role string) error {
	now := store.Now()
	_, err := st.DB.NewInsert().Model(&store.ProjectMember{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project,
		UserUUID: user, Role: role, CreatedAt: now, UpdatedAt: now}).Exec(ctx)
	return err
}

func TestToolRequestLedger(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		agent := b.Agent.UUID

		row, err := st.BeginToolRequest(ctx, agent, "r1", "tool_a", "h1")
		require.NoError(t, err)
		require.Equal(t, "running", row.State)
		require.Equal(t, 0, row.Generation)
		require.NoError(t, st.FinishToolRequest(ctx, agent, "r1", 0, []byte(`{"uuid":"x"}`)))
		row, err = st.BeginToolRequest(ctx, agent, "r1", "tool_a", "h1")
		require.NoError(t, err)
		require.Equal(t, "done", row.State)
		require.JSONEq(t, `{"uuid":"x"}`, string(row.Result))
		require.NoError(t, st.FinishToolRequest(ctx, agent, "r1", 0, []byte(`{"uuid":"late twin"}`)))
		row, err = st.BeginToolRequest(ctx, agent, "r1", "tool_a", "h1")
		require.NoError(t, err)
		require.JSONEq(t, `{"uuid":"x"}`, string(row.Result), "the first result stored is kept")
		_, err = st.BeginToolRequest(ctx, agent, "r1", "tool_a", "other-args")
		require.ErrorIs(t, err, store.ErrRequestMismatch)
		_, err = st.BeginToolRequest(ctx, agent, "r1", "tool_b", "h1")
		require.ErrorIs(t, err, store.ErrRequestMismatch, "a key belongs to one tool")

		// A refused call moves its key to the next generation, once however many twins report it.
		_, err = st.BeginToolRequest(ctx, agent, "r2", "tool_a", "h")
		require.NoError(t, err)
		require.NoError(t, st.RefuseToolRequest(ctx, agent, "r2", 0))
		require.NoError(t, st.RefuseToolRequest(ctx, agent, "r2", 0))
		row, err = st.BeginToolRequest(ctx, agent, "r2", "tool_a", "h")
		require.NoError(t, err)
		require.Equal(t, "running", row.State)
		require.Equal(t, 1, row.Generation)
		require.NoError(t, st.FinishToolRequest(ctx, agent, "r2", 0, []byte(`{"stale":true}`)))
		require.NoError(t, st.RefuseToolRequest(ctx, agent, "r2", 1))
		row, err = st.BeginToolRequest(ctx, agent, "r2", "tool_a", "h")
		require.NoError(t, err)
		require.Equal(t, "running", row.State, "a result of an older generation is not kept")
		require.Equal(t, 2, row.Generation)

		// A call refused as invalid input releases its key: the next generation is taken by the
		// corrected call, whatever its arguments, and then bound to it. A second release by a
		// late twin of the refused call changes nothing.
		_, err = st.BeginToolRequest(ctx, agent, "r3", "tool_a", "bad-args")
		require.NoError(t, err)
		require.NoError(t, st.ReleaseToolRequest(ctx, agent, "r3", 0))
		require.NoError(t, st.ReleaseToolRequest(ctx, agent, "r3", 0))
		row, err = st.BeginToolRequest(ctx, agent, "r3", "tool_a", "good-args")
		require.NoError(t, err)
		require.Equal(t, 1, row.Generation, "a fresh generation: the refused one's update id is not reused")
		require.Equal(t, "good-args", row.ArgsHash)
		_, err = st.BeginToolRequest(ctx, agent, "r3", "tool_a", "bad-args")
		require.ErrorIs(t, err, store.ErrRequestMismatch, "while the corrected call runs, the key is its")
		require.NoError(t, st.FinishToolRequest(ctx, agent, "r3", 1, []byte(`{"ok":true}`)))
		_, err = st.BeginToolRequest(ctx, agent, "r3", "tool_b", "good-args")
		require.ErrorIs(t, err, store.ErrRequestMismatch, "once a call ran, the key is bound to it")
		row, err = st.BeginToolRequest(ctx, agent, "r3", "tool_a", "good-args")
		require.NoError(t, err)
		require.JSONEq(t, `{"ok":true}`, string(row.Result))
	})
}

// Twin calls (the same agent and requestId, sent while the first still runs, through any store
// of the database) wait for the first call's outcome: its result, or, after a refusal, their
// own run of the next generation. A call whose holder died runs once the lease lapses; a twin
// whose deadline passes first is told the call is still in progress
// (docs/write-path.md, "Exactly once").
func TestToolRequestTwinsWaitForTheFirstCall(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			dsn := storetest.NewDSN(t, d)
			st, other := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn) // two API processes
			b, err := st.EnsureBootstrap(context.Background(), boot)
			require.NoError(t, err)
			agent := b.Agent.UUID
			// begin starts a call of tool_a with rid; its ledger row arrives on the channel (nil
			// if BeginToolRequest failed, which fails the test).
			begin := func(s *store.Store, rid string) (context.CancelFunc, <-chan *store.ToolRequest) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				out := make(chan *store.ToolRequest, 1)
				go func() {
					row, err := s.BeginToolRequest(ctx, agent, rid, "tool_a", "h")
					if err != nil {
						t.Errorf("BeginToolRequest(%s): %v", rid, err)
					}
					out <- row
				}()
				return cancel, out
			}
			waiting := func(ch <-chan *store.ToolRequest) {
				t.Helper()
				select {
				case row := <-ch:
					t.Fatalf("a twin ran beside the first call: %+v", row)
				case <-time.After(300 * time.Millisecond): // a twin that does not wait returns at once
				}
			}

			// The first call succeeds: its twins, here and in the other process, get its result.
			cancelFirst, first := begin(st, "r1")
			defer cancelFirst()
			require.Equal(t, "running", (<-first).State)
			cancelTwin, twin := begin(other, "r1")
			defer cancelTwin()
			cancelTwin2, twin2 := begin(st, "r1")
			defer cancelTwin2()
			waiting(twin)
			require.NoError(t, st.FinishToolRequest(context.Background(), agent, "r1", 0, []byte(`{"uuid":"x"}`)))
			for _, ch := range []<-chan *store.ToolRequest{twin, twin2} {
				row := <-ch
				require.Equal(t, "done", row.State)
				require.JSONEq(t, `{"uuid":"x"}`, string(row.Result))
			}

			// The first call is refused: one twin runs the next generation, and the other waits for it.
			cancelFirst, first = begin(st, "r2")
			defer cancelFirst()
			require.Equal(t, 0, (<-first).Generation)
			cancelTwin, twin = begin(other, "r2")
			defer cancelTwin()
			waiting(twin)
			require.NoError(t, st.RefuseToolRequest(context.Background(), agent, "r2", 0))
			row := <-twin
			require.Equal(t, "running", row.State)
			require.Equal(t, 1, row.Generation)
			cancelTwin2, twin2 = begin(st, "r2")
			defer cancelTwin2()
			waiting(twin2)
			cancelTwin() // the twin's call ended without an outcome (its deadline passed): its lease is cleared
			row = <-twin2
			require.Equal(t, "running", row.State)
			require.Equal(t, 1, row.Generation, "the same generation: its work is idempotent for it")

			// A twin whose deadline passes while the first call runs is told it is still in progress.
			cancelFirst, first = begin(st, "r3")
			defer cancelFirst()
			<-first
			short, cancelShort := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancelShort()
			_, err = other.BeginToolRequest(short, agent, "r3", "tool_a", "h")
			require.ErrorIs(t, err, store.ErrRequestInProgress)
			require.ErrorIs(t, err, context.DeadlineExceeded)

			// A holder that died keeps the row until its lease lapses; then a retry runs it.
			until := store.Now().Add(time.Second)
			dead := "a-crashed-process"
			_, err = st.DB.NewInsert().Model(&store.ToolRequest{AgentUUID: agent, RequestID: "r4", Tool: "tool_a", ArgsHash: "h",
				State: "running", CreatedAt: store.Now(), RunningUntil: &until, RunningBy: &dead}).Exec(context.Background())
			require.NoError(t, err)
			started := time.Now()
			cancelTwin, twin = begin(other, "r4")
			defer cancelTwin()
			row = <-twin
			require.Equal(t, "running", row.State)
			require.Equal(t, 0, row.Generation)
			require.GreaterOrEqual(t, time.Since(started), 500*time.Millisecond, "it waited for the lease")
		})
	}
}

func TestMigrationsRoundTrip(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.CheckMigrated(ctx))
		undone, err := st.Rollback(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, undone)
		require.Error(t, st.CheckMigrated(ctx))
		applied, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, undone, applied)
		require.NoError(t, st.CheckMigrated(ctx))
	})
}

func ptr[T any](v T) *T { return &v }

// bootProject bootstraps st and creates the project "Apollo" as its admin agent.
func bootProject(t *testing.T, st *store.Store) (*store.BootstrapResult, *store.Project) {
	t.Helper()
	ctx := context.Background()
	b, err := st.EnsureBootstrap(ctx, boot)
	require.NoError(t, err)
	p, err := st.CreateProject(ctx, store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID},
		store.NewProject{Name: "Apollo"})
	require.NoError(t, err)
	return b, p
}

// ListAgentsOf pages the company's agents, or one owner's, with the total; an agent and a key
// take the uuid they are given.
func TestListAgentsOfPagesAndOwners(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		ann, err := st.CreateUser(ctx, b.Company.UUID, "ann@example.com", "Ann", store.RoleMember)
		require.NoError(t, err)
		id := store.NewUUID()
		a, _, err := st.CreateAgent(ctx, store.NewAgent{UUID: id, CompanyUUID: b.Company.UUID, Name: "ann's", OwnerUUID: &ann.UUID})
		require.NoError(t, err)
		require.Equal(t, id, a.UUID)
		_, _, err = st.CreateAgent(ctx, store.NewAgent{UUID: id, CompanyUUID: b.Company.UUID, Name: "twin"})
		require.ErrorIs(t, err, store.ErrConflict, "a uuid names one agent")
		kid := store.NewUUID()
		k, _, err := st.CreateKeyWith(ctx, b.Company.UUID, id, store.NewKey{UUID: kid})
		require.NoError(t, err)
		require.Equal(t, kid, k.UUID)

		page, total, err := st.ListAgentsOf(ctx, b.Company.UUID, "", 1, 1)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, page, 1)
		require.Equal(t, id, page[0].UUID, "oldest first: the bootstrap agent, then Ann's")
		require.Equal(t, 2, page[0].ActiveKeys)
		mine, total, err := st.ListAgentsOf(ctx, b.Company.UUID, ann.UUID, 50, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Len(t, mine, 1)
		require.Equal(t, "ann@example.com", *mine[0].OwnerEmail)
	})
}
