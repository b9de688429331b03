package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/stream"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }

// stack is Chorus as a person meets it: the MCP endpoint and the console on one HTTP server,
// over a fresh store, the Temporal dev server and a worker on the stack's own task queue.
type stack struct {
	t        testing.TB
	st       *store.Store
	app      *app.App
	con      *console.Console
	echo     *echo.Echo // the server's router: every route the console mounted is in echo.Routes()
	url      string     // the server's origin, http://127.0.0.1:port
	company  string
	admin    *store.User       // the company's first user, its admin
	adminKey string            // the admin agent's key (owned by admin)
	outage   *storetest.Outage // the database switch (stackOptions.faulty), else nil
}

// stackOptions change a stack: the console's configuration beyond App and Log.
type stackOptions struct {
	console console.Config
	// configure, when set, completes the console's configuration once the server's origin
	// (http://127.0.0.1:port) is known, before the console is built.
	configure func(origin string, cfg *console.Config)
	// faulty opens the store through storetest.OpenFaulty: stack.outage cuts the database off.
	faulty bool
}

func newStack(t testing.TB, dialect string) *stack { return startStack(t, dialect, stackOptions{}) }

func startStack(t testing.TB, dialect string, o stackOptions) *stack {
	t.Helper()
	s := &stack{t: t}
	if o.faulty {
		s.st, s.outage = storetest.OpenFaulty(t, dialect)
	} else {
		s.st = storetest.Open(t, dialect)
	}
	ctx := context.Background()
	boot, err := s.st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada Admin",
		OwnerEmail: "ada@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	s.company, s.admin, s.adminKey = boot.Company.UUID, &boot.Owner, boot.Key

	var logs io.Writer = io.Discard
	if os.Getenv("CHORUS_TEST_LOG") != "" {
		logs = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logs, nil))
	tc := wftest.Server(t).Client()
	queue := "test-" + store.NewUUID()
	w := workflows.NewWorker(tc, queue, activities.New(s.st, tc), worker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	flows := workflows.NewClient(tc, queue, s.st)
	hub := s.st.NewEventHub(log)
	hubCtx, stopHub := context.WithCancel(context.Background())
	t.Cleanup(stopHub)
	go hub.Run(hubCtx)
	s.app = &app.App{Store: s.st, Flows: flows, Log: log, Events: hub}

	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: s.st, Flows: flows, Log: log}, "test")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil) // listens now: its origin is known before the console is built
	t.Cleanup(srv.Close)
	s.url = "http://" + srv.Listener.Addr().String()
	cfg := o.console
	cfg.App, cfg.Log = s.app, log
	if o.configure != nil {
		o.configure(s.url, &cfg)
	}
	s.con, err = console.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	ep.Mount(e)
	s.con.Mount(e)
	events := stream.New(stream.Config{App: s.app, Log: log, Key: ep.KeyPrincipal, Session: s.con.SessionPrincipal})
	events.Mount(e)
	events.MountSession(e, console.EventsPath)
	s.echo = e
	srv.Config.Handler = e
	srv.Start()
	return s
}

// user adds a person with a role (store.RoleAdmin or store.RoleMember).
func (s *stack) user(email, role string) *store.User {
	s.t.Helper()
	u, err := s.st.CreateUser(context.Background(), s.company, email, "", role)
	require.NoError(s.t, err)
	return u
}

// link is a fresh one-time sign-in link for u.
func (s *stack) link(u *store.User) string {
	s.t.Helper()
	token, err := s.st.CreateLoginLink(context.Background(), u, time.Hour)
	require.NoError(s.t, err)
	return s.url + console.Path + "/login/link/" + token
}

// agent creates an agent with presets, owned by owner (nil: ownerless), and connects it over MCP.
func (s *stack) agent(name string, owner *store.User, presets ...string) *mcpclient.Agent {
	s.t.Helper()
	var ownerUUID *string
	if owner != nil {
		ownerUUID = &owner.UUID
	}
	_, key, err := s.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: s.company, Name: name,
		Roles: presets, Permissions: []string{}, OwnerUUID: ownerUUID})
	require.NoError(s.t, err)
	return s.connect(key)
}

// connect is an MCP client with key.
func (s *stack) connect(key string) *mcpclient.Agent {
	s.t.Helper()
	a, err := mcpclient.Connect(context.Background(), s.url+mcp.Path, key, &mcpsdk.Implementation{Name: "console-test", Version: "1"})
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = a.Close() })
	return a
}

// call calls a tool as a and returns its structured result as a map; a refusal fails the test.
func (s *stack) call(a *mcpclient.Agent, tool string, args map[string]any) map[string]any {
	s.t.Helper()
	var out map[string]any
	require.NoError(s.t, a.Call(context.Background(), tool, args, &out), "%s", tool)
	return out
}

// The browser: one Chromium for the package, a fresh browser context (its own cookies) per person.
var (
	chromiumOnce  sync.Once
	chromiumCtx   context.Context
	chromiumError string
)

// chromiumPath is the browser to drive: $CHORUS_CHROMIUM, else Debian's chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("CHORUS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one person's browser window on the stack.
type browser struct {
	t    testing.TB
	ctx  context.Context
	base string
}

// newBrowser opens a window with no cookies. Without Chromium the test skips, and fails under
// CI=true (install it with apt-get install -y chromium).
func (s *stack) newBrowser() *browser {
	s.t.Helper()
	chromiumOnce.Do(func() {
		path := chromiumPath()
		if path == "" {
			chromiumError = "Chromium not found: apt-get install -y chromium, or set CHORUS_CHROMIUM"
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1440, 960),
			chromedp.Flag("headless", true), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(mustTempDir()))
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
		}
		alloc, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		chromiumCtx, _ = chromedp.NewContext(alloc) // the browser, started by its first action
		// The first action starts the browser and binds it to the context it runs on: no timeout here.
		if err := chromedp.Do(chromiumCtx, chromedp.Navigate("about:blank")); err != nil {
			chromiumError = "Chromium did not start: " + err.Error()
		}
	})
	if chromiumError != "" {
		if os.Getenv("CI") == "true" {
			s.t.Fatalf("%s (under CI=true the browser tests must run)", chromiumError)
		}
		s.t.Skip(chromiumError)
	}
	ctx, cancel := chromedp.NewContext(chromiumCtx, chromedp.WithNewBrowserContext())
	s.t.Cleanup(cancel)
	require.NoError(s.t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "open a browser window") // binds the tab to ctx
	return &browser{t: s.t, ctx: ctx, base: s.url}
}

func mustTempDir() string {
	d, err := os.MkdirTemp("", "chorus-console-chromium-")
	if err != nil {
		panic(err)
	}
	return d
}

// do runs browser actions, failing the test after 60 s.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

// run runs one action with a result.
func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(b.t, err)
	return v
}

// open goes to a console path ("/console/...") or a full URL and waits for its body.
func (b *browser) open(path string) {
	b.t.Helper()
	if strings.HasPrefix(path, "/") {
		path = b.base + path
	}
	b.do(chromedp.Navigate(path), chromedp.WaitReady("body"))
}

// signIn follows a sign-in link and presses its button.
func (b *browser) signIn(link string) {
	b.t.Helper()
	b.open(link)
	b.click("#signin")
}

// click clicks the first element matching a CSS selector and waits until the page it leads to
// has loaded.
func (b *browser) click(sel string) {
	b.t.Helper()
	run(b, chromedp.Evaluate[bool](`window.__chorusBefore = true`))
	b.do(chromedp.Click(sel))
	b.waitFor(`window.__chorusBefore !== true`)
}

// fill replaces the value of a form field.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	b.do(chromedp.SetValue(sel, value))
}

// text is the visible text of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return run(b, chromedp.Text(sel))
}

// page is the whole page's visible text.
func (b *browser) page() string { return b.text("body") }

// location is the current URL.
func (b *browser) location() string { return run(b, chromedp.Location()) }

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	return run(b, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// waitFor polls a JavaScript condition until it holds (30 s at most). A page that is still
// navigating (after a click that posts a form) is polled again.
func (b *browser) waitFor(js string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && (`+js+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("the page never met %s (last error: %v); it shows:\n%s", js, last, b.page())
}

// waitText waits until the page shows s.
func (b *browser) waitText(s string) {
	b.t.Helper()
	b.waitFor(`document.body.innerText.includes(` + jsString(s) + `)`)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "<", `\x3c`)
	return `"` + r.Replace(s) + `"`
}

// screenshot saves the window as a PNG (for make screenshots).
func (b *browser) screenshot(path string) {
	b.t.Helper()
	png := run(b, chromedp.FullScreenshot(100))
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
}

// readAll reads and closes a response body.
func readAll(t testing.TB, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// formValue is the value of the first hidden input named name in an HTML page.
func formValue(html, name string) string {
	i := strings.Index(html, `name="`+name+`" value="`)
	if i < 0 {
		return ""
	}
	rest := html[i+len(`name="`+name+`" value="`):]
	return rest[:strings.IndexByte(rest, '"')]
}
