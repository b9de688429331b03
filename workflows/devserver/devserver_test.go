package devserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// findOrSkip returns a tool's binary, skipping the test without it (failing under CI=true).
func findOrSkip(t *testing.T, tool Tool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a cold build takes minutes
	defer cancel()
	bin, err := Find(ctx, tool, os.Stderr)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s unavailable under CI: %v", tool.What, err)
		}
		t.Skipf("%s unavailable (%v); run `make test`, or set %s", tool.What, err, tool.Env)
	}
	return bin
}

// get sends GET url with the Host header set to host and returns the status and body.
func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", url, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDevServerServesLoopbackHostsOnly is the DNS-rebinding scenario of issue 18: a web page
// whose own name now resolves to 127.0.0.1 sends requests carrying its name as Host (here
// with an Authorization header, which makes the UI skip its CSRF check). The UI and the
// frontend's HTTP API refuse them, and serve the same requests addressed to a loopback name.
func TestDevServerServesLoopbackHostsOnly(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts temporal-server; skipped under -short")
	}
	bin := findOrSkip(t, ServerTool)
	uiBin := findOrSkip(t, UITool)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	uiPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Start(Options{Bin: bin, UIBin: uiBin, Port: port, UIPort: uiPort, LogPath: filepath.Join(dir, "temporal.log"),
		ConfigDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(10 * time.Second) })
	if err := s.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	api := "http://" + s.HTTPAddress() + "/api/v1/namespaces"
	ui := "http://" + s.UIAddress()
	_, httpPort, _ := strings.Cut(s.HTTPAddress(), ":")
	_, uiPortText, _ := strings.Cut(s.UIAddress(), ":")
	for _, tc := range []struct{ name, url, host string }{
		{"frontend HTTP API", api, "rebind.example:" + httpPort},
		{"frontend HTTP API, loopback IP but another port", api, "127.0.0.1:1"},
		{"UI page", ui + "/namespaces/default/workflows", "rebind.example:" + uiPortText},
		{"UI API", ui + "/api/v1/namespaces", "rebind.example:" + uiPortText},
		{"UI API, no port", ui + "/api/v1/namespaces", "rebind.example"},
	} {
		code, body := get(t, tc.url, tc.host)
		if code != http.StatusForbidden {
			t.Errorf("%s with Host %s: status %d, want 403; body %.200q", tc.name, tc.host, code, body)
		}
		if strings.Contains(body, "temporal-system") || strings.Contains(body, "<html") {
			t.Errorf("%s with Host %s answered content: %.200q", tc.name, tc.host, body)
		}
	}
	for _, tc := range []struct{ name, url, host, want string }{
		{"frontend HTTP API", api, "127.0.0.1:" + httpPort, "temporal-system"},
		{"frontend HTTP API, localhost", api, "localhost:" + httpPort, "temporal-system"},
		{"UI page", ui + "/namespaces/default/workflows", "127.0.0.1:" + uiPortText, "<html"},
		{"UI page, localhost", ui + "/", "localhost:" + uiPortText, "<html"},
		{"UI API", ui + "/api/v1/namespaces", "127.0.0.1:" + uiPortText, "temporal-system"},
	} {
		code, body := get(t, tc.url, tc.host)
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("%s with Host %s: status %d, want 200 with %q; body %.300q", tc.name, tc.host, code, tc.want, body)
		}
	}
}

// TestDevServerKeepsDataAcrossRestarts: a file-backed dev server stopped and started again on
// the same file keeps the namespace it registered the first time (the retention given then,
// not the one asked for at the second start).
func TestDevServerKeepsDataAcrossRestarts(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts temporal-server; skipped under -short")
	}
	bin := findOrSkip(t, ServerTool)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "temporal.log")
	if p := os.Getenv("CHORUS_TEST_TEMPORAL_LOG"); p != "" {
		logPath = p
	}
	for i := range 2 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s, err := Start(Options{Bin: bin, Port: port, DBFile: filepath.Join(dir, "temporal.db"), Namespace: "keep",
			LogPath: logPath, Retention: time.Duration(i+2) * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		err = s.WaitReady(context.Background(), 2*time.Minute)
		if err == nil {
			var c client.Client
			if c, err = client.Dial(client.Options{HostPort: s.Address(), Namespace: "keep"}); err == nil {
				var d *workflowservice.DescribeNamespaceResponse
				d, err = c.WorkflowService().DescribeNamespace(context.Background(),
					&workflowservice.DescribeNamespaceRequest{Namespace: "keep"})
				if err == nil && d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != 48*time.Hour {
					t.Errorf("start %d: retention %s, want the 48h of the first start", i+1,
						d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
				}
				c.Close()
			}
		}
		if stopErr := s.Stop(10 * time.Second); stopErr != nil {
			t.Errorf("start %d: %v", i+1, stopErr)
		}
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
	}
	if old, err := PredatesServer(context.Background(), filepath.Join(dir, "temporal.db")); err != nil || old {
		t.Errorf("a file this server made predates it: %v, %v", old, err)
	}
	for _, f := range []string{"temporal.db", "temporal-server.yaml", "temporal-dynamicconfig.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestVersionIsThePinnedServer: Version names the release tools/server/go.mod pins.
func TestVersionIsThePinnedServer(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "tools", "server", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\tgo.temporal.io/server v"+Version+" ") && !strings.Contains(string(b), "\tgo.temporal.io/server v"+Version+"\n") {
		t.Errorf("tools/server/go.mod does not pin go.temporal.io/server v%s (devserver.Version)", Version)
	}
	// docker-compose.yml runs the same server (and its admin tools, which migrate the schema)
	// and the same UI release as tools/ui, so make test-prod and compose agree with the dev stack.
	ui, err := os.ReadFile(filepath.Join("..", "..", "tools", "ui", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	uiVersion := regexp.MustCompile(`github\.com/temporalio/ui-server/v2 v(\S+)`).FindSubmatch(ui)
	if uiVersion == nil {
		t.Fatal("tools/ui/go.mod does not require github.com/temporalio/ui-server/v2")
	}
	compose, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, image := range []string{"temporalio/server:" + Version, "temporalio/admin-tools:" + Version,
		"temporalio/ui:" + string(uiVersion[1])} {
		if !strings.Contains(string(compose), image) {
			t.Errorf("docker-compose.yml does not run %s (the version tools/server and tools/ui pin)", image)
		}
	}
	if n := len(regexp.MustCompile(`image: temporalio/server:|temporalio/admin-tools:|image: temporalio/ui:`).FindAll(compose, -1)); n != 3 {
		t.Errorf("docker-compose.yml names %d Temporal images, want 3 (server, admin-tools, ui): keep them pinned together", n)
	}
}

// TestDynamicConfigKeysAreKnown: every key of the dev server's dynamic configuration, and of
// deploy/temporal-dynamicconfig.yaml, is one the pinned server knows with a value of its type
// (temporal-server validate-dynamic-config; an unknown key would be ignored with a warning in
// the server's log).
func TestDynamicConfigKeysAreKnown(t *testing.T) {
	bin := findOrSkip(t, ServerTool)
	dir := t.TempDir()
	dyn, err := dynamicConfigYAML(Options{}, ports{HTTP: 7243})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "temporal-dynamicconfig.yaml")
	if err := os.WriteFile(path, dyn, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, filepath.Join("..", "..", "deploy", "temporal-dynamicconfig.yaml")} {
		out, err := exec.Command(bin, "validate-dynamic-config", f).CombinedOutput()
		if err != nil || strings.Contains(string(out), "warning") || strings.Contains(string(out), "error") {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
}

// TestDevServerChoosesPortsAgainWhenOneIsTaken: a port chosen for one of the server's internal
// listeners that another process takes before the server binds it (here: the HTTP API port of
// the previous start, kept in the configuration and taken meanwhile by a listener that checks
// as free) makes the server exit; WaitReady then starts it again on other ports, so a test on a
// busy machine does not fail on that race.
func TestDevServerChoosesPortsAgainWhenOneIsTaken(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts temporal-server; skipped under -short")
	}
	bin := findOrSkip(t, ServerTool)
	dir := t.TempDir()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Bin: bin, Port: port, DBFile: filepath.Join(dir, "temporal.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	taken := s.ports.HTTP
	if err := s.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Start reuses the free ports of the previous configuration; take the HTTP port right after
	// Start checked it, as another process would.
	s, err = Start(Options{Bin: bin, Port: port, DBFile: filepath.Join(dir, "temporal.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(10 * time.Second) })
	if s.ports.HTTP != taken {
		t.Fatalf("the restart chose HTTP port %d, not the previous %d", s.ports.HTTP, taken)
	}
	ln, err := net.Listen("tcp", hostPort(taken))
	if err != nil {
		t.Skipf("the server bound port %d before the test could take it: %v", taken, err)
	}
	defer ln.Close()
	if err := s.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatalf("WaitReady did not recover from the taken port: %v", err)
	}
	if s.ports.HTTP == taken {
		t.Fatalf("still on the taken HTTP port %d", taken)
	}
}

// `chorus dev` passes its data dir as given, and its default (.chorus) is relative: the server,
// which runs in that dir, still finds its configuration and database (it did not, and `make run`
// on a fresh clone stopped at "could not read config file: .chorus/temporal-server.yaml").
func TestDevServerStartsOnARelativeDataDir(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts temporal-server; skipped under -short")
	}
	bin := findOrSkip(t, ServerTool)
	t.Chdir(t.TempDir())
	if err := os.Mkdir(".chorus", 0o700); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Bin: bin, Port: port, DBFile: filepath.Join(".chorus", "temporal.db"), Namespace: "relative"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(10 * time.Second) }()
	if err := s.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(".chorus", "temporal.db")); err != nil {
		t.Errorf("the database is not where it was asked for: %v", err)
	}
}
