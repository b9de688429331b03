package mcp

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// Who may reach the endpoint from where (docs/security.md, docs/rules.md §3.1): the MCP
// transport specification asks servers to validate Origin against DNS rebinding, and a server
// bound to loopback to answer only loopback Host names. The go-sdk's own guard
// (StreamableHTTPOptions.DisableLocalhostProtection) refuses any non-loopback Host on a loopback
// connection, which would also refuse a TLS proxy on the same machine that keeps its public
// Host; Chorus replaces it with these allow-lists, whose defaults are the SDK's rule.

// EdgeOptions say which Host names and browser Origins the HTTP server admits. The zero value
// admits loopback names and loopback origins only: what a server bound to 127.0.0.1 wants.
type EdgeOptions struct {
	// AllowedHosts are the host names (no port; any port matches) a request's Host may name,
	// compared without case; "*" admits any. Empty: localhost, 127.0.0.1 and ::1.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port], as browsers send them) that
	// may call the MCP endpoint; "*" admits any. Empty: http and https origins on a loopback
	// name, any port (the MCP Inspector's web UI is http://localhost:6274). A request without an
	// Origin (every non-browser client) is not concerned.
	AllowedOrigins []string
}

// loopbackNames are the host names of the loopback interface.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// IsLoopbackAddr reports whether a listen address (host:port) binds to loopback only.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostAllowed reports whether a Host header value (host[:port]) names an allowed host.
func (o EdgeOptions) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	allowed := o.AllowedHosts
	if len(allowed) == 0 {
		allowed = loopbackNames
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.Trim(a, "[]"), host) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a request's Origin header may call the endpoint; a request
// without one may.
func (o EdgeOptions) originAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	if len(o.AllowedOrigins) == 0 {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.RawQuery != "" {
			return false
		}
		return EdgeOptions{}.hostAllowed(u.Host)
	}
	for _, a := range o.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	return false
}

// GuardHost makes ech refuse, on every path, a request whose Host o does not allow, as Mount
// does for a server with the MCP endpoint: for a process that serves no endpoint (a worker's
// /healthz, /readyz, /metrics).
func GuardHost(ech *echo.Echo, o EdgeOptions, m *Metrics) { ech.Pre(checkHost(o, m)) }

// GuardHostHandler is GuardHost for a listener that is not an echo server (chorus serve's
// --metrics-addr): h answers only requests whose Host o allows; others get checkHost's 403.
func GuardHostHandler(o EdgeOptions, m *Metrics, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.hostAllowed(r.Host) {
			h.ServeHTTP(w, r)
			return
		}
		m.refusal(KindForbiddenHost)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": codeInvalidRequest, "message": forbiddenHost}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(append(body, '\n'))
	})
}

// forbiddenHost is the answer to a request whose Host is not allowed.
const forbiddenHost = "Forbidden: this server does not answer to the host name in the request's Host header; an " +
	"operator adds it with --allowed-hosts"

// checkHost refuses, on every path of the server, a request whose Host is not allowed: a page
// that rebinds its own name to this machine reaches it under that name. 403, JSON, nothing run.
func checkHost(o EdgeOptions, m *Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if o.hostAllowed(c.Request().Host) {
				return next(c)
			}
			m.refusal(KindForbiddenHost)
			secureHeaders(c)
			return rpcError(c, http.StatusForbidden, codeInvalidRequest, nil, forbiddenHost)
		}
	}
}

// cors answers preflights on every path and marks every other answer as readable cross-origin,
// for the origins EdgeOptions allow. A preflight from another origin gets 403, and other answers
// to it carry no Access-Control-Allow-Origin, so its page can neither send a call nor read one.
func (e *Endpoint) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		allowed := e.deps.Edge.originAllowed(c.Request().Header.Get("Origin"))
		if c.Request().Method == http.MethodOptions {
			if !allowed {
				e.deps.Metrics.refusal(KindForbiddenOrigin)
				return c.NoContent(http.StatusForbidden)
			}
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "86400")
			return c.NoContent(http.StatusNoContent)
		}
		if allowed {
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Expose-Headers", corsExpose)
		}
		return next(c)
	}
}

// checkOrigin is the first middleware of every MCP route: a browser request from an origin
// that is not allowed is refused with 403 before its key is looked at (MCP transport
// specification, "Security Warning"). It also marks every answer of the endpoint as not to be
// sniffed or stored.
func (e *Endpoint) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		secureHeaders(c)
		if origin := c.Request().Header.Get("Origin"); !e.deps.Edge.originAllowed(origin) {
			e.deps.Metrics.refusal(KindForbiddenOrigin)
			return rpcError(c, http.StatusForbidden, codeInvalidRequest, nil, fmt.Sprintf("Forbidden: requests from "+
				"the origin %q are not accepted; an operator adds an origin with --allowed-origins", clipped(origin)))
		}
		return next(c)
	}
}

// secureHeaders makes the answer, whoever writes it (the edge, the SDK), say nosniff and
// no-store: answers carry private text and must not be kept by caches or read as another type.
func secureHeaders(c echo.Context) {
	res := c.Response()
	set := func() {
		res.Header().Set("X-Content-Type-Options", "nosniff")
		res.Header().Set("Cache-Control", "no-store")
	}
	set()
	res.Before(set)
}
