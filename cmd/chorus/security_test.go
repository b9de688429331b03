package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// The abuse suite's process edge (issue 18; docs/security.md): what chorus serve and chorus dev
// expose, and how they reach Temporal.

// chorus serve and chorus dev listen on loopback unless told otherwise.
func TestServeListensOnLoopbackByDefault(t *testing.T) {
	t.Setenv("CHORUS_ADDR", "")
	for _, cmd := range []string{"serve", "dev"} {
		c, _, err := newRootCmd().Find([]string{cmd})
		require.NoError(t, err)
		def := c.Flags().Lookup("addr").DefValue
		require.True(t, mcp.IsLoopbackAddr(def), "chorus %s listens on %s by default", cmd, def)
	}
	require.Equal(t, "127.0.0.1:8637", func() string {
		c, _, _ := newRootCmd().Find([]string{"serve"})
		return c.Flags().Lookup("addr").DefValue
	}())
}

// serveTest runs runServer with cfg (role api unless set) until the test ends, logging into log,
// and returns once it serves.
func serveTest(t *testing.T, st *store.Store, cfg serverConfig, log *slog.Logger) {
	t.Helper()
	if cfg.role == "" {
		cfg.role = roleAPI
	}
	cfg.temporalWait = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	ready, exited := make(chan struct{}), make(chan error, 1)
	go func() { exited <- runServer(ctx, log, st, cfg, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("runServer did not stop within a minute")
		}
	})
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("runServer ended before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("runServer did not serve within a minute")
	}
}

func freeAddr(t *testing.T, host string) (listen, reach string) {
	t.Helper()
	p, err := devserver.FreePort()
	require.NoError(t, err)
	return fmt.Sprintf("%s:%d", host, p), fmt.Sprintf("127.0.0.1:%d", p)
}

func get(t *testing.T, u string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// syncLog is a log sink tests read.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}
func (l *syncLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// /metrics is never open to other machines: on an address that is not loopback it is served
// only on --metrics-addr or behind CHORUS_METRICS_TOKEN. /readyz says what is wrong without an
// error's own text, and a foreign Host is refused on every path; on SQLite and PostgreSQL.
func TestMetricsAndReadyzExposure(t *testing.T) {
	tmp := startReadyTemporal(t)
	ns := tmp.namespace(t, "exposure")
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)
			tc := temporalConfig{address: tmp.addr, namespace: ns}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

			// Listening on every interface, no token: /metrics is not on the main address.
			wide, reach := freeAddr(t, "0.0.0.0")
			metricsListen, metricsReach := freeAddr(t, "127.0.0.1")
			serveTest(t, st, serverConfig{addr: wide, temporal: tc, edge: edgeConfig{metricsAddr: metricsListen}}, quiet)
			code, _ := get(t, "http://"+reach+"/metrics", nil)
			require.Equal(t, http.StatusNotFound, code, "/metrics on 0.0.0.0 without a token")
			code, body := get(t, "http://"+metricsReach+"/metrics", nil)
			require.Equal(t, http.StatusOK, code)
			require.True(t, strings.Contains(body, "chorus_limit_refusals_total"), "the metrics are served")

			// Behind a token.
			wide2, reach2 := freeAddr(t, "0.0.0.0")
			serveTest(t, st, serverConfig{addr: wide2, temporal: tc, edge: edgeConfig{metricsToken: "s3cret-metrics"}}, quiet)
			code, _ = get(t, "http://"+reach2+"/metrics", nil)
			require.Equal(t, http.StatusUnauthorized, code)
			code, _ = get(t, "http://"+reach2+"/metrics", map[string]string{"Authorization": "Bearer wrong"})
			require.Equal(t, http.StatusUnauthorized, code)
			code, body = get(t, "http://"+reach2+"/metrics", map[string]string{"Authorization": "Bearer s3cret-metrics"})
			require.Equal(t, http.StatusOK, code)
			require.True(t, strings.Contains(body, "chorus_refusals_total"), "the metrics are served")

			// On loopback, a rebinding Host is refused everywhere, /readyz and /metrics included.
			local, _ := freeAddr(t, "127.0.0.1")
			logs := &syncLog{}
			st2 := storetest.Open(t, dialect)
			serveTest(t, st2, serverConfig{addr: local, temporal: tc}, slog.New(slog.NewTextHandler(logs, nil)))
			for _, path := range []string{"/readyz", "/healthz", "/metrics", mcp.Path} {
				code, _ := get(t, "http://"+local+path, map[string]string{"Host": "evil.example:8637"})
				require.Equal(t, http.StatusForbidden, code, path)
			}
			// The database goes away: /readyz names the part, the log has the error.
			require.NoError(t, st2.Close())
			code, body = get(t, "http://"+local+"/readyz", nil)
			require.Equal(t, http.StatusServiceUnavailable, code)
			var ready map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &ready))
			require.Equal(t, "unreachable", ready["store"])
			require.Contains(t, body, "the process log says why")
			require.NotContains(t, body, "closed", "an error's own text stays in the log: %s", body)
			require.Contains(t, logs.String(), "readyz: the database does not answer")
		})
	}
	require.Equal(t, "stopped (the process log says why)",
		func() string {
			h := &workerHealth{role: roleWorker}
			h.stopped(fmt.Errorf("dial 10.0.0.7: token abc"))
			return h.status()
		}())
}

// chorus dev never writes an API key into its output or its log: not one taken from
// CHORUS_BOOTSTRAP_ADMIN_KEY, and not one it made unless its output is a terminal (the key is in
// <data-dir>/admin.key either way).
func TestDevNeverLogsKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("starts chorus dev")
	}
	key := store.GenerateKey()
	t.Setenv("CHORUS_BOOTSTRAP_ADMIN_KEY", key)
	t.Setenv("CHORUS_LOG_LEVEL", "debug")
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("CHORUS_DATABASE_URL", "")
	// The logger writes to the process's standard error: read it through a pipe.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w
	var logged bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&logged, r); close(copied) }()
	restore := func() { os.Stderr = stderr; _ = w.Close(); <-copied }
	defer func() {
		if os.Stderr != stderr {
			restore()
		}
	}()

	dataDir := t.TempDir()
	out := &syncLog{}
	ports := make([]int, 3)
	for i := range ports {
		ports[i], err = devserver.FreePort()
		require.NoError(t, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, &globals{dataDir: dataDir}, devOptions{addr: addr, temporalPort: ports[1], uiPort: ports[2],
			edge: edgeConfig{limits: mcp.DefaultLimits()}}, out)
	}()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), "Chorus is ready") {
		select {
		case err := <-done:
			t.Fatalf("chorus dev ended: %v\n%s", err, out.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "chorus dev did not start: %s", out.String())
		time.Sleep(200 * time.Millisecond)
	}
	// Calls with the key, a refused key, and a refused tool, all logged at debug.
	a, err := connectAgent(ctx, "http://"+addr+mcp.Path, key)
	require.NoError(t, err)
	require.NoError(t, a.Call(ctx, "chorus_checkin", nil, nil))
	require.Error(t, a.Call(ctx, "chorus_get_task", map[string]any{"taskUuid": store.NewUUID()}, nil))
	_ = a.Close()
	_, err = connectAgent(ctx, "http://"+addr+mcp.Path, key+"x")
	require.Error(t, err)
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("chorus dev did not stop")
	}
	restore()

	saved, err := os.ReadFile(filepath.Join(dataDir, "admin.key"))
	require.NoError(t, err)
	require.Equal(t, key, strings.TrimSpace(string(saved)))
	require.Contains(t, out.String(), "Admin API key")
	require.NotContains(t, out.String(), console.Path+"/login/link/", "a sign-in link is printed to a terminal only")
	require.Contains(t, logged.String(), "tool call", "the debug log was read")
	for name, text := range map[string]string{"output": out.String(), "log": logged.String()} {
		require.NotContains(t, text, key, "chorus dev's %s holds the admin key", name)
		require.NotContains(t, text, key[:20], "chorus dev's %s holds part of the admin key", name)
	}

	// A key chorus dev made is printed to a terminal only.
	boot := &store.BootstrapResult{Created: true, Key: store.GenerateKey(), Agent: store.Agent{Name: "Admin Agent"}}
	var banner bytes.Buffer
	printBanner(&banner, dataDir, addr, "", "admin.key", boot, isTerminal(&banner), "chorus user login-link owner@localhost")
	require.NotContains(t, banner.String(), boot.Key)
	require.Contains(t, banner.String(), "Sign in:       chorus user login-link owner@localhost")
	require.Contains(t, banner.String(), "saved to admin.key")
	banner.Reset()
	printBanner(&banner, dataDir, addr, "", "admin.key", boot, true, "chorus user login-link owner@localhost")
	require.Contains(t, banner.String(), boot.Key, "to a terminal, once")
}

// Every command's output wears terminalSafe's wrapper (newRootCmd): chorus dev must still see a
// terminal through it, or make run never shows the key it made (the README's first step). A
// character device stands for the terminal here; a file and a buffer are not one.
func TestTerminalIsSeenThroughTheSafeWrapper(t *testing.T) {
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer tty.Close()
	require.True(t, isTerminal(tty))
	require.True(t, isTerminal(terminalSafe(tty)), "the wrapped terminal is not seen as one")
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer file.Close()
	require.False(t, isTerminal(terminalSafe(file)))
	require.False(t, isTerminal(terminalSafe(&bytes.Buffer{})))

	// Through the root command, as chorus dev gets its output.
	root := newRootCmd()
	root.SetOut(tty)
	var seen bool
	probe := &cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
		seen = isTerminal(cmd.OutOrStdout())
		return nil
	}}
	root.AddCommand(probe)
	root.SetArgs([]string{"probe"})
	require.NoError(t, root.Execute())
	require.True(t, seen, "a command's output on a terminal is not seen as one")
}

// chorus dev records its Temporal in the data dir once, address and namespace
// (devserver.WriteAddressFile), and chorus ops reads the address back; a data dir written by an
// older chorus dev, with the address alone, still reads.
func TestDevAddressFileIsReadBack(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devserver.WriteAddressFile(dir, "127.0.0.1:7351", "chorus"))
	addr, ok := readDevAddress(dir)
	require.True(t, ok)
	require.Equal(t, "127.0.0.1:7351", addr)
	a, ns, err := devserver.ReadAddressFile(dir)
	require.NoError(t, err)
	require.Equal(t, [2]string{"127.0.0.1:7351", "chorus"}, [2]string{a, ns})

	require.NoError(t, os.WriteFile(filepath.Join(dir, devserver.AddressFile), []byte("127.0.0.1:7233\n"), 0o600))
	addr, ok = readDevAddress(dir)
	require.True(t, ok)
	require.Equal(t, "127.0.0.1:7233", addr)
	_, ok = readDevAddress(t.TempDir())
	require.False(t, ok)
}

// testPKI is a CA with a server certificate for localhost and a client certificate, in files.
type testPKI struct {
	dir                                    string
	caFile, serverCert, serverKey          string
	clientCert, clientKey, otherClientCert string
	otherClientKey                         string
	caPool                                 *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, blocks ...*pem.Block) string {
		var b bytes.Buffer
		for _, bl := range blocks {
			require.NoError(t, pem.Encode(&b, bl))
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	keyPEM := func(k *ecdsa.PrivateKey) *pem.Block {
		der, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	}
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) *x509.Certificate {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		require.NoError(t, err)
		c, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return c
	}
	serial := int64(1)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	}
	p := testPKI{dir: dir}
	caKey := newKey()
	caT := template("chorus test CA")
	caT.IsCA, caT.BasicConstraintsValid, caT.KeyUsage = true, true, x509.KeyUsageCertSign
	ca := issue(caT, caT, &caKey.PublicKey, caKey)
	p.caFile = write("ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(ca)
	srvKey := newKey()
	srvT := template("temporal.test")
	srvT.DNSNames, srvT.ExtKeyUsage = []string{"temporal.test", "localhost"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	srvT.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	p.serverCert = write("server.pem", &pem.Block{Type: "CERTIFICATE", Bytes: issue(srvT, ca, &srvKey.PublicKey, caKey).Raw})
	p.serverKey = write("server-key.pem", keyPEM(srvKey))
	cliKey := newKey()
	cliT := template("chorus-worker")
	cliT.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	p.clientCert = write("client.pem", &pem.Block{Type: "CERTIFICATE", Bytes: issue(cliT, ca, &cliKey.PublicKey, caKey).Raw})
	p.clientKey = write("client-key.pem", keyPEM(cliKey))
	// A client certificate from another CA, which the server must refuse.
	otherCAKey := newKey()
	otherCAT := template("another CA")
	otherCAT.IsCA, otherCAT.BasicConstraintsValid, otherCAT.KeyUsage = true, true, x509.KeyUsageCertSign
	otherCA := issue(otherCAT, otherCAT, &otherCAKey.PublicKey, otherCAKey)
	oKey := newKey()
	oT := template("intruder")
	oT.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	p.otherClientCert = write("other.pem", &pem.Block{Type: "CERTIFICATE", Bytes: issue(oT, otherCA, &oKey.PublicKey, otherCAKey).Raw})
	p.otherClientKey = write("other-key.pem", keyPEM(oKey))
	return p
}

// fakeFrontend is a Temporal frontend that answers GetSystemInfo (what a client asks first) and
// records who asked: the client certificate's name and the authorization metadata.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu    sync.Mutex
	calls []string
}

func (f *fakeFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	who := "no client certificate"
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			who = ti.State.PeerCertificates[0].Subject.CommonName
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.calls = append(f.calls, who+" | "+strings.Join(md.Get("authorization"), ","))
	f.mu.Unlock()
	return &workflowservice.GetSystemInfoResponse{Capabilities: &workflowservice.GetSystemInfoResponse_Capabilities{}}, nil
}

// chorus reaches Temporal over TLS, presents its client certificate (mTLS) and its API key when
// configured, and refuses a server its CA did not sign.
func TestTemporalConnectionSecurity(t *testing.T) {
	pki := newTestPKI(t)
	srvCert, err := tls.LoadX509KeyPair(pki.serverCert, pki.serverKey)
	require.NoError(t, err)
	front := &fakeFrontend{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{srvCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.caPool, MinVersion: tls.VersionTLS12})))
	workflowservice.RegisterWorkflowServiceServer(gs, front)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	cfg := temporalConfig{address: ln.Addr().String(), namespace: "default", tlsCA: pki.caFile, tlsServerName: "temporal.test",
		tlsCert: pki.clientCert, tlsKey: pki.clientKey, apiKey: "tmprl-key-123"}
	c, err := dialTemporal(ctx, quiet, cfg, 5*time.Second)
	require.NoError(t, err)
	c.Close()
	require.NotEmpty(t, front.calls)
	require.Equal(t, "chorus-worker | Bearer tmprl-key-123", front.calls[0])
	require.Equal(t, fmt.Sprintf("%s (namespace \"default\", mTLS and an API key)", cfg.address), cfg.describe())
	require.NotContains(t, cfg.describe(), "tmprl-key-123")

	// Refused: no client certificate, one from another CA, a server our CA did not sign.
	for name, bad := range map[string]temporalConfig{
		"no client certificate": {address: cfg.address, namespace: "default", tlsCA: pki.caFile, tlsServerName: "temporal.test"},
		"foreign certificate": {address: cfg.address, namespace: "default", tlsCA: pki.caFile, tlsServerName: "temporal.test",
			tlsCert: pki.otherClientCert, tlsKey: pki.otherClientKey},
		"unknown server CA": {address: cfg.address, namespace: "default", tlsServerName: "temporal.test",
			tlsCert: pki.clientCert, tlsKey: pki.clientKey},
	} {
		_, err := dialTemporal(ctx, quiet, bad, time.Second)
		require.Error(t, err, name)
	}
	_, _, err = (&temporalConfig{tlsCert: pki.clientCert}).connectionOptions()
	require.ErrorContains(t, err, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together")
}

// With payload keys, what Chorus hands Temporal is ciphertext: a run's history holds no private
// text (read through a client without the keys), replays with the keys, and the codec server
// decodes its payloads only for a caller holding a codec token.
func TestPayloadEncryptionEndToEnd(t *testing.T) {
	tmp := startReadyTemporal(t)
	ns := tmp.namespace(t, "sealed")
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	t.Setenv("CHORUS_PAYLOAD_KEYS", "k1:"+base64.StdEncoding.EncodeToString(b))
	st := storetest.Open(t, "sqlite")
	boot, err := st.EnsureBootstrap(context.Background(), store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin"})
	require.NoError(t, err)
	addr, _ := freeAddr(t, "127.0.0.1")
	tcfg := temporalConfig{address: tmp.addr, namespace: ns}
	queue := "sealed-" + store.NewUUID()[:8]
	serveTest(t, st, serverConfig{role: roleAll, addr: addr, temporal: tcfg, taskQueue: queue},
		slog.New(slog.NewTextHandler(io.Discard, nil)))

	ctx := context.Background()
	a, err := connectAgent(ctx, "http://"+addr+mcp.Path, boot.Key)
	require.NoError(t, err)
	defer a.Close()
	const secret = "Project Nightingale launch plan"
	var project, idea struct{ UUID string }
	require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "Apollo"}, &project))
	require.NoError(t, a.Call(ctx, "chorus_pm_create_idea", map[string]any{"projectUuid": project.UUID, "title": secret,
		"content": "the confidential details"}, &idea))
	require.NoError(t, a.Call(ctx, "chorus_claim_idea", map[string]any{"ideaUuid": idea.UUID}, nil))

	// The history, read without the keys.
	plain, err := client.Dial(client.Options{HostPort: tmp.addr, Namespace: ns})
	require.NoError(t, err)
	defer plain.Close()
	wid := vocab.IdeaID(idea.UUID)
	h := &historypb.History{}
	it := plain.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	raw, err := protojson.Marshal(h)
	require.NoError(t, err)
	// In the binary encoding every payload's bytes appear as they are stored.
	stored, err := proto.Marshal(h)
	require.NoError(t, err)
	for _, s := range []string{secret, "confidential", "Nightingale"} {
		require.False(t, bytes.Contains(stored, []byte(s)), "the history holds %q", s)
	}
	require.True(t, bytes.Contains(stored, []byte(workflows.MetadataEncodingEncrypted)))
	var sealed *commonpb.Payload
	for _, ev := range h.Events {
		if in := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetArgs().GetPayloads(); len(in) > 0 && sealed == nil {
			sealed = in[0] // the create: it carries the title
		}
		for _, p := range append(ev.GetActivityTaskScheduledEventAttributes().GetInput().GetPayloads(),
			ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()...) {
			require.Equal(t, workflows.MetadataEncodingEncrypted, string(p.GetMetadata()["encoding"]), "every payload is sealed")
		}
	}
	require.NotNil(t, sealed, "the create update's input in the history")

	// It replays with the keys, and not without them.
	keys, err := tcfg.payloadKeys()
	require.NoError(t, err)
	withKeys := workflows.NewConverters(keys)
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	r, err := (&ops.Ops{Converters: &withKeys}).ReplayHistory(ctx, path, "")
	require.NoError(t, err)
	require.NoError(t, r.Divergence)
	r, err = (&ops.Ops{}).ReplayHistory(ctx, path, "")
	require.NoError(t, err)
	require.Error(t, r.Divergence, "without the keys the history cannot be read")

	// ops check opens the sealed digest in the workflow's memo with the keys, and so compares the
	// idea at a glance; without them it cannot, and queries the workflow instead.
	d, err := plain.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	require.Equal(t, workflows.MetadataEncodingEncrypted,
		string(d.GetWorkflowExecutionInfo().GetMemo().GetFields()[workflows.MemoDigest].GetMetadata()["encoding"]))
	sealedClient, err := dialTemporal(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), tcfg, 10*time.Second)
	require.NoError(t, err)
	defer sealedClient.Close()
	for _, c := range []struct {
		conv    *workflows.Converters
		queried int
	}{{&withKeys, 0}, {nil, 1}} {
		x := &ops.Ops{Store: st, Flows: workflows.NewClient(sealedClient, queue, st), Converters: c.conv}
		report, pass, err := x.CheckPass(ctx)
		require.NoError(t, err)
		require.Empty(t, report.Findings)
		require.Equal(t, 1, pass.Compared)
		require.Equal(t, c.queried, pass.Queried, "converters given: %v", c.conv != nil)
	}

	// The codec server: nothing without a token, the text with one (header or sign-in cookie),
	// CORS for the UI's origin only.
	srv := httptest.NewServer(codecHandler(keys, []string{"tok-1", "tok-2"}, []string{"http://localhost:8233"},
		slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{sealed}})
	require.NoError(t, err)
	decode := func(header map[string]string, cookie *http.Cookie) (int, string, http.Header) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, string(b), resp.Header
		}
		var out commonpb.Payloads
		require.NoError(t, protojson.Unmarshal(b, &out))
		return resp.StatusCode, string(out.Payloads[0].GetData()), resp.Header
	}
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "tok-1"}} {
		code, text, _ := decode(h, nil)
		require.Equal(t, http.StatusUnauthorized, code, "%v", h)
		require.NotContains(t, text, secret)
	}
	code, text, _ := decode(map[string]string{"Authorization": "Bearer tok-2"}, nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, text, secret)
	code, _, _ = decode(map[string]string{"Authorization": "Bearer tok-1", "Origin": "http://evil.example"}, nil)
	require.Equal(t, http.StatusForbidden, code)

	// The UI: the operator signs in once; its cross-origin calls carry the cookie.
	resp, err := http.PostForm(srv.URL+"/login", url.Values{"token": {"nope"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())
	resp, err = http.PostForm(srv.URL+"/login", url.Values{"token": {"tok-1"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	cookie := resp.Cookies()[0]
	require.True(t, cookie.HttpOnly)
	code, text, hdr := decode(map[string]string{"Origin": "http://localhost:8233", "Authorization": "Bearer ui-access-token"}, cookie)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, text, secret)
	require.Equal(t, "http://localhost:8233", hdr.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", hdr.Get("Access-Control-Allow-Credentials"))
}

// The --metrics-addr and --pprof-addr listeners keep the Host check of every other path (docs/security.md: the
// Host check covers /metrics on every process): a page that rebinds its own name to a loopback
// metrics address reads nothing. On an address other machines reach, any Host is served, as on
// the main address.
func TestMetricsListenerChecksHost(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "chorus_metrics 1\n") })
	local, _ := freeAddr(t, "127.0.0.1")
	stop, err := serveMetrics(quiet, local, edgeConfig{}, nil, h)
	require.NoError(t, err)
	t.Cleanup(stop)
	code, body := get(t, "http://"+local+"/metrics", map[string]string{"Host": "evil.example:9464"})
	require.Equal(t, http.StatusForbidden, code, "a rebinding Host reads the metrics: %s", body)
	require.NotContains(t, body, "chorus_metrics")
	code, body = get(t, "http://"+local+"/metrics", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "chorus_metrics")

	wide, reach := freeAddr(t, "0.0.0.0")
	stop2, err := serveMetrics(quiet, wide, edgeConfig{}, nil, h)
	require.NoError(t, err)
	t.Cleanup(stop2)
	code, _ = get(t, "http://"+reach+"/metrics", map[string]string{"Host": "metrics.internal.example:9464"})
	require.Equal(t, http.StatusOK, code, "an address other machines reach answers the names it is reached by")

	// --pprof-addr the same: its command line and profiles are not for a rebinding page.
	prof, _ := freeAddr(t, "127.0.0.1")
	stop3, err := servePprof(quiet, prof, edgeConfig{}, nil)
	require.NoError(t, err)
	t.Cleanup(stop3)
	code, _ = get(t, "http://"+prof+"/debug/pprof/cmdline", map[string]string{"Host": "evil.example:6060"})
	require.Equal(t, http.StatusForbidden, code, "a rebinding Host reads the profiles")
	code, _ = get(t, "http://"+prof+"/debug/pprof/cmdline", nil)
	require.Equal(t, http.StatusOK, code)
}
