package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/perm"
)

// Path is where the MCP endpoint is served.
const Path = "/api/mcp"

const instructions = `Chorus tracks software delivery for teams of agents: ideas are claimed and clarified
through elaboration rounds, turned into proposals of document and task drafts, approved into real
tasks, then claimed, worked, self-checked, submitted and verified. Call chorus_checkin first to
learn who you are, what you may do, and which projects you are active in. Every mutating tool takes
an optional requestId: reuse it when you retry so nothing happens twice.`

// Endpoint is the MCP endpoint (SPEC 3.0): stateless Streamable HTTP through the go-sdk, one
// cached server per permission set, each listing exactly the tools that set may call.
type Endpoint struct {
	deps    *Deps
	version string
	tools   []*builtTool
	servers sync.Map // perm.Set -> *mcpsdk.Server
	handler http.Handler
}

// NewEndpoint builds every tool of the table once. version is reported in serverInfo.
func NewEndpoint(d *Deps, version string) (*Endpoint, error) {
	e := &Endpoint{deps: d, version: version}
	for _, t := range toolTable() {
		bt, err := t.build(d)
		if err != nil {
			return nil, err
		}
		e.tools = append(e.tools, bt)
	}
	e.handler = mcpsdk.NewStreamableHTTPHandler(e.serverFor, &mcpsdk.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       sdkLogger(d.Log),
		// Every request carries a bearer key, so the DNS-rebinding guard for unauthenticated
		// localhost servers does not apply; leaving it on would refuse proxied requests.
		DisableLocalhostProtection: true,
	})
	return e, nil
}

// Mount adds the endpoint's routes to an echo server: POST (authenticated MCP), OPTIONS (CORS
// preflight), and GET/DELETE answered 405 since a stateless server has no streams or sessions.
func (e *Endpoint) Mount(ech *echo.Echo) {
	ech.POST(Path, echo.WrapHandler(e.handler), cors, e.authenticate, jsonrpcGuard, defaultAccept)
	ech.OPTIONS(Path, preflight)
	ech.GET(Path, methodNotAllowed, cors)
	ech.DELETE(Path, methodNotAllowed, cors)
}

// serverFor returns the MCP server for the request's permission set, building it on first use.
// The SDK calls it twice per request; both calls hit the cache.
func (e *Endpoint) serverFor(r *http.Request) *mcpsdk.Server {
	p, ok := principalFrom(r.Context())
	if !ok {
		return nil // unreachable behind authenticate; the SDK answers 400
	}
	if s, ok := e.servers.Load(p.Perms); ok {
		return s.(*mcpsdk.Server)
	}
	s, _ := e.servers.LoadOrStore(p.Perms, e.newServer(p.Perms))
	return s.(*mcpsdk.Server)
}

func (e *Endpoint) newServer(perms perm.Set) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "chorus", Title: "Chorus", Version: e.version},
		&mcpsdk.ServerOptions{Instructions: instructions, Logger: sdkLogger(e.deps.Log), Capabilities: &mcpsdk.ServerCapabilities{
			Tools: &mcpsdk.ToolCapabilities{}}})
	allowed := map[string]bool{}
	for _, t := range e.tools {
		if perms.Has(t.spec.Perm) {
			s.AddTool(t.tool, t.handler)
			allowed[t.spec.Name] = true
		}
	}
	s.AddReceivingMiddleware(hideUnlisted(allowed))
	return s
}

// sdkLogger passes the SDK's warnings and errors; its per-request session logs are noise for a
// stateless server, where every request is a session.
func sdkLogger(l *slog.Logger) *slog.Logger { return LevelFloor(l, slog.LevelWarn) }

// LevelFloor returns a logger that drops records below min, for chatty libraries.
func LevelFloor(l *slog.Logger, min slog.Level) *slog.Logger {
	return slog.New(levelFloor{l.Handler(), min})
}

type levelFloor struct {
	h   slog.Handler
	min slog.Level
}

func (f levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}

func (f levelFloor) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < f.min {
		return nil
	}
	return f.h.Handle(ctx, r)
}

func (f levelFloor) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFloor{f.h.WithAttrs(as), f.min}
}
func (f levelFloor) WithGroup(g string) slog.Handler { return levelFloor{f.h.WithGroup(g), f.min} }

// ToolNames lists the tools a permission set sees, in table order.
func (e *Endpoint) ToolNames(perms perm.Set) []string {
	var out []string
	for _, t := range e.tools {
		if perms.Has(t.spec.Perm) {
			out = append(out, t.spec.Name)
		}
	}
	return out
}

// hideUnlisted answers a call to a tool this server does not list with the same isError result
// for unknown and for permission-hidden tools, so a key cannot probe what it lacks (SPEC 3.0).
func hideUnlisted(allowed map[string]bool) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcpsdk.CallToolParamsRaw); ok && !allowed[p.Name] {
					return &mcpsdk.CallToolResult{IsError: true,
						Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: toolNotFound(p.Name).Error()}}}, nil
				}
			}
			return next(ctx, method, req)
		}
	}
}

// defaultAccept lets clients that send no (or a narrow) Accept header in: the SDK requires both
// application/json and text/event-stream, and answers JSON here either way.
func defaultAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		acc := h.Get("Accept")
		if !strings.Contains(acc, "application/json") || !strings.Contains(acc, "text/event-stream") {
			h.Set("Accept", "application/json, text/event-stream")
		}
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
		return next(c)
	}
}

// jsonrpcGuard answers bodies that are not JSON-RPC 2.0 with a JSON-RPC error object (the SDK
// would answer plain text naming its Go types): -32700 for invalid JSON, -32600 for JSON that
// is not a request, a notification or a batch of them.
func jsonrpcGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return rpcError(c, http.StatusBadRequest, -32700, "Parse error: the request body could not be read")
		}
		c.Request().Body = io.NopCloser(bytes.NewReader(body))
		trimmed := bytes.TrimSpace(body)
		if !json.Valid(trimmed) {
			return rpcError(c, http.StatusBadRequest, -32700, "Parse error: the request body is not valid JSON")
		}
		var msgs []map[string]json.RawMessage
		if len(trimmed) > 0 && trimmed[0] == '[' {
			if json.Unmarshal(trimmed, &msgs) != nil || len(msgs) == 0 {
				return rpcError(c, http.StatusBadRequest, -32600, "Invalid Request: a batch must be a non-empty array of JSON-RPC objects")
			}
		} else {
			var m map[string]json.RawMessage
			if json.Unmarshal(trimmed, &m) != nil {
				return rpcError(c, http.StatusBadRequest, -32600, "Invalid Request: the body must be a JSON-RPC 2.0 object")
			}
			msgs = append(msgs, m)
		}
		for _, m := range msgs {
			if string(bytes.TrimSpace(m["jsonrpc"])) != `"2.0"` {
				return rpcError(c, http.StatusBadRequest, -32600, `Invalid Request: "jsonrpc" must be "2.0"`)
			}
			_, hasMethod := m["method"]
			_, hasResult := m["result"]
			_, hasError := m["error"]
			if !hasMethod && !hasResult && !hasError {
				return rpcError(c, http.StatusBadRequest, -32600, `Invalid Request: "method" is missing`)
			}
		}
		return next(c)
	}
}

func rpcError(c echo.Context, status, code int, msg string) error {
	return c.JSON(status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}

const (
	corsMethods = "POST, OPTIONS"
	corsHeaders = "Content-Type, Authorization, mcp-protocol-version"
)

func cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Access-Control-Allow-Origin", "*")
		return next(c)
	}
}

func preflight(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", "86400")
	return c.NoContent(http.StatusNoContent)
}

func methodNotAllowed(c echo.Context) error {
	c.Response().Header().Set("Allow", corsMethods)
	return c.JSON(http.StatusMethodNotAllowed, map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error": map[string]any{"code": -32601,
			"message": "Method not allowed: stateless server has no sessions"},
	})
}
