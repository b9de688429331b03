// Command chorus-temporal-ui is the Temporal web UI (github.com/temporalio/ui-server, pinned in
// go.mod) as `chorus dev --ui` runs it: on one loopback address, talking to the dev server's
// frontend, and answering only requests whose Host is that address (or localhost/[::1] on the
// same port). The UI has no login and can read every workflow history and terminate, signal or
// reset workflows, and its CSRF check is skipped when a request carries an Authorization
// header; refusing other Host names is what keeps a web page that rebinds its own DNS name to
// 127.0.0.1 (DNS rebinding) from driving it (docs/security.md).
//
// The UI server takes no Host allow-list and builds its echo instance privately, so this
// command assembles the same server from the ui-server packages (what server.NewServer does in
// v2.55.0) with the Host check in front of every route.
//
//	chorus-temporal-ui --port 8233 --temporal-address 127.0.0.1:7233 --namespace default
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/api"
	"github.com/temporalio/ui-server/v2/server/auth"
	"github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/cors"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/headers"
	"github.com/temporalio/ui-server/v2/server/route"
	"github.com/temporalio/ui-server/v2/server/version"
	"github.com/temporalio/ui-server/v2/ui"
)

type staticConfig struct{ cfg *config.Config }

func (s staticConfig) GetConfig() (*config.Config, error) { return s.cfg, nil }

func main() {
	ip := flag.String("ip", "127.0.0.1", "address to listen on (a loopback address)")
	port := flag.Int("port", 8233, "port to listen on")
	temporal := flag.String("temporal-address", "127.0.0.1:7233", "gRPC address of the Temporal frontend")
	namespace := flag.String("namespace", "default", "namespace the UI opens on")
	var extraHosts stringList
	flag.Var(&extraHosts, "allowed-host", "another Host header value to serve (host or host:port; repeatable)")
	showVersion := flag.Bool("version", false, "print the UI server version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.UIVersion)
		return
	}
	if addr := net.ParseIP(*ip); addr == nil || !addr.IsLoopback() {
		log.Fatalf("chorus-temporal-ui: --ip %q is not a loopback address; the UI has no login, so it serves this machine only", *ip)
	}
	cfg := &config.Config{
		Host: *ip, Port: *port, TemporalGRPCAddress: *temporal, EnableUI: true, DefaultNamespace: *namespace,
		CORS: config.CORS{CookieInsecure: true}, HideLogs: true, DisableNewsFetch: true,
		Distribution: "chorus", DistributionVersion: version.UIVersion,
	}
	e, err := newServer(cfg, allowedHosts(*ip, *port, extraHosts))
	if err != nil {
		log.Fatalf("chorus-temporal-ui: %v", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		_ = e.Close()
	}()
	if err := e.Start(net.JoinHostPort(*ip, strconv.Itoa(*port))); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("chorus-temporal-ui: %v", err)
	}
}

// allowedHosts are the Host header values served: the listen address and the loopback names
// of the same port, plus any given (a bare host allows it on the listen port).
func allowedHosts(ip string, port int, extra []string) []string {
	p := strconv.Itoa(port)
	hosts := []string{net.JoinHostPort(ip, p), "localhost:" + p, "127.0.0.1:" + p, "[::1]:" + p}
	for _, h := range extra {
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), p)
		}
		hosts = append(hosts, strings.ToLower(h))
	}
	return hosts
}

// hostCheck refuses, with 403 and before any route runs, a request whose Host header is not
// one of hosts (compared case-insensitively, with the port).
func hostCheck(hosts []string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if slices.Contains(hosts, strings.ToLower(c.Request().Host)) {
				return next(c)
			}
			return c.String(http.StatusForbidden, "Host not allowed: this Temporal UI serves only "+hosts[0]+
				" (it refuses other names so that no web page can reach it through DNS rebinding)\n")
		}
	}
}

// newServer is server.NewServer of github.com/temporalio/ui-server/v2 v2.55.0 with hostCheck as
// its first middleware. Keep it in step with that function when the pinned version changes.
func newServer(cfg *config.Config, hosts []string) (*echo.Echo, error) {
	cfgProvider, err := config.NewConfigProviderWithRefresh(staticConfig{cfg})
	if err != nil {
		return nil, err
	}
	apiMiddleware := []api.Middleware{
		headers.WithForwardHeaders([]string{auth.AuthorizationExtrasHeader, "Caller-Type"}),
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Pre(hostCheck(hosts))
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(cors.CORSMiddleware(cors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, auth.AuthorizationExtrasHeader,
			"Caller-Type",
		},
		AllowCredentials: true,
		ConfigProvider:   cfgProvider,
	}))
	e.Use(middleware.Secure())
	csrfCookieSecure := !cfg.CORS.CookieInsecure
	e.Use(csrf.EnsureTokenCookie(csrfCookieSecure))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(cfgProvider, csrfCookieSecure)))
	e.Pre(route.PublicPath(cfg.PublicPath))
	route.SetHealthRoute(e)
	if err := route.SetAPIRoutes(e, cfgProvider, apiMiddleware); err != nil {
		return nil, err
	}
	route.SetAuthRoutes(e, cfgProvider)
	assets, err := ui.Assets()
	if err != nil {
		return nil, err
	}
	if assets, err = fs.Sub(assets, "local"); err != nil {
		return nil, err
	}
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets, cfgProvider); err != nil {
		return nil, err
	}
	route.SetRenderRoute(e, "/")
	return e, nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
