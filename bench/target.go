package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// benchTarget is the Chorus being measured.
type benchTarget struct {
	url             string
	metricsURL      string // the Chorus process's /metrics ("" when unknown)
	adminKey        string
	temporalAddress string
	namespace       string
	database        string // how the app database is described, for the report
	st              *store.Store
	company         *store.Company
	owner           *store.User // the company owner: the agents the bench creates act with its access
	adminUUID       string
	cleanup         []func()
}

func (t *benchTarget) close() {
	for i := len(t.cleanup) - 1; i >= 0; i-- {
		t.cleanup[i]()
	}
}

// benchLogger keeps the started stack quiet unless something goes wrong.
func benchLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startBenchStack runs the whole stack as chorus dev does, on free ports in a temporary directory.
func startBenchStack(ctx context.Context, o Options, w Wiring, progress io.Writer) (*benchTarget, error) {
	t := &benchTarget{namespace: o.Namespace}
	ok := false
	defer func() {
		if !ok {
			t.close()
		}
	}()
	dir, err := os.MkdirTemp("", "chorus-bench-")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		fmt.Fprintf(progress, "bench: keeping %s\n", dir)
	} else {
		t.cleanup = append(t.cleanup, func() { _ = os.RemoveAll(dir) })
	}
	dsn := o.DatabaseURL
	if dsn == "" {
		dsn = filepath.Join(dir, "chorus.db")
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	t.st, t.database = st, store.DescribeURL(dsn)
	if _, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Default Company", OwnerName: "Owner",
		OwnerEmail: "owner@localhost", AgentName: "Admin Agent"}); err != nil {
		return nil, fmt.Errorf("first-start setup: %w", err)
	}
	if err := t.loadCompany(ctx); err != nil {
		return nil, err
	}
	admin, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: t.company.UUID, Name: "bench admin",
		Roles: []string{perm.AdminAgent}, OwnerUUID: &t.owner.UUID})
	if err != nil {
		return nil, err
	}
	t.adminKey, t.adminUUID = key, admin.UUID

	bin, err := devserver.FindServer(ctx, progress)
	if err != nil {
		return nil, err
	}
	tport, err := devserver.FreePort()
	if err != nil {
		return nil, err
	}
	devserver.DynamicConfig = append(devserver.DynamicConfig, o.DynamicConfig...)
	dev, err := devserver.Start(devserver.Options{Bin: bin, Port: tport, DBFile: filepath.Join(dir, "temporal.db"),
		LogPath: filepath.Join(dir, "temporal.log"), Namespace: o.Namespace})
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = dev.Stop(20 * time.Second) })
	if err := dev.WaitReady(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	t.temporalAddress = dev.Address()

	hport, err := devserver.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(hport))
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		s := Server{Addr: addr, TemporalAddress: dev.Address(), Namespace: o.Namespace, TemporalWait: 30 * time.Second,
			PprofAddr: o.PprofAddr}
		if o.webhooks {
			s.WebhookAllow = hookAllow
		}
		if o.soaking {
			s.Retention = store.Retention{Requests: o.SoakWindow, Journal: o.SoakWindow, ClaimAttempts: o.SoakWindow}
			s.PruneInterval, s.Soak = o.PruneInterval, true
		}
		done <- w.Serve(srvCtx, benchLogger(), st, s, func() { close(ready) })
	}()
	t.cleanup = append(t.cleanup, func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		done <- err
		return nil, fmt.Errorf("the Chorus server stopped at start: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.url = "http://" + addr + mcp.Path
	t.metricsURL = "http://" + addr + "/metrics"
	fmt.Fprintf(progress, "bench: Chorus on %s (%s), Temporal dev server on %s\n", t.url, t.database, t.temporalAddress)
	fmt.Fprintf(progress, "bench: dev server dynamic config %s\n", strings.Join(devserver.DynamicConfig, " "))
	ok = true
	return t, nil
}

// connectBenchTarget prepares to measure a running Chorus.
func connectBenchTarget(ctx context.Context, o Options) (*benchTarget, error) {
	t := &benchTarget{url: o.Endpoint, adminKey: o.Key, temporalAddress: o.TemporalAddress, namespace: o.Namespace, database: "(not opened)"}
	if u, err := url.Parse(o.Endpoint); err == nil {
		t.metricsURL = u.Scheme + "://" + u.Host + "/metrics" // the API process's: its worker, with role all
	}
	if o.DatabaseURL == "" {
		return t, nil
	}
	st, err := store.Open(ctx, o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	t.cleanup = append(t.cleanup, func() { _ = st.Close() })
	t.st, t.database = st, store.DescribeURL(o.DatabaseURL)
	if err := st.CheckMigrated(ctx); err != nil {
		t.close()
		return nil, err
	}
	if err := t.loadCompany(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *benchTarget) loadCompany(ctx context.Context) error {
	company, err := t.st.DefaultCompany(ctx)
	if err != nil {
		return fmt.Errorf("find the company: %w", err)
	}
	owner, err := t.st.CompanyOwner(ctx, company.UUID)
	if err != nil {
		return fmt.Errorf("find the company's owner: %w", err)
	}
	t.company, t.owner = company, owner
	return nil
}

// newDevelopers creates n developer agents, each with its own key, through the store.
func (t *benchTarget) newDevelopers(ctx context.Context, prefix string, n int) ([]string, error) {
	if t.st == nil {
		return nil, errors.New("needs the app database to create agents (pass --database-url)")
	}
	keys := make([]string, n)
	for i := range keys {
		_, key, err := t.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: t.company.UUID, Name: fmt.Sprintf("%s %d", prefix, i+1),
			Roles: []string{perm.DeveloperAgent}, OwnerUUID: &t.owner.UUID})
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// connectAgent connects one simulated agent: its own key and MCP session.
func connectAgent(ctx context.Context, url, key, version string) (*mcpclient.Agent, error) {
	return mcpclient.Connect(ctx, url, key, &mcpsdk.Implementation{Name: "chorus-bench", Version: version})
}

func connectAgents(ctx context.Context, url, version string, keys []string) ([]*mcpclient.Agent, error) {
	out := make([]*mcpclient.Agent, len(keys))
	for i, k := range keys {
		a, err := connectAgent(ctx, url, k, version)
		if err != nil {
			closeAgents(out)
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func closeAgents(as []*mcpclient.Agent) {
	for _, a := range as {
		if a != nil {
			_ = a.Close()
		}
	}
}
