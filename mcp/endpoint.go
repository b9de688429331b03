package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/perm"
)

// Path is where the MCP endpoint is served.
const Path = "/api/mcp"

// Endpoint is the MCP endpoint (docs/rules.md §3.1): stateless Streamable HTTP through the go-sdk, one
// cached server per permission set, each listing exactly the tools that set may call.
type Endpoint struct {
	deps    *Deps
	version string
	tools   []*builtTool
	servers sync.Map // perm.Set -> *mcpsdk.Server
	// jsonHandler answers in JSON; streamHandler in one server-sent event, for clients that
	// accept only text/event-stream.
	jsonHandler, streamHandler http.Handler
	// limits is nil when Deps.Limits limits nothing.
	limits *limiter
	// mutating names the tools that are not read-only: their calls take turns per key.
	mutating map[string]bool
}

// NewEndpoint builds every tool of the table once. version is reported in serverInfo.
func NewEndpoint(d *Deps, version string) (*Endpoint, error) {
	e := &Endpoint{deps: d, version: version, mutating: map[string]bool{}}
	if l := newLimiter(d.Limits); !l.off() {
		e.limits = l
	}
	if d.Flows != nil && d.Flows.Applied == nil && d.Store != nil {
		d.Flows.Applied = d.Store.UpdateOutcome // a retried call's update is not applied twice
	}
	for _, t := range toolTable() {
		bt, err := t.build(d)
		if err != nil {
			return nil, err
		}
		e.tools = append(e.tools, bt)
		if bt.spec.Effect != reads {
			e.mutating[bt.spec.Name] = true
		}
	}
	for _, asJSON := range []bool{true, false} {
		h := mcpsdk.NewStreamableHTTPHandler(e.serverFor, &mcpsdk.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: asJSON,
			Logger:       sdkLogger(d.Log),
			// The SDK's DNS-rebinding guard refuses every non-loopback Host on a loopback
			// connection, so a TLS proxy on the same machine could not keep its public Host.
			// The edge checks Host and Origin itself, against allow-lists whose defaults are the
			// SDK's rule (edge.go, EdgeOptions), before the key is looked at.
			DisableLocalhostProtection: true,
			// The edge (http.go) holds bodies to MaxRequestBytes; a swapped request id may add a few bytes.
			MaxRequestBodyBytes: MaxRequestBytes + int64(len(edgeID)),
		})
		if asJSON {
			e.jsonHandler = h
		} else {
			e.streamHandler = h
		}
	}
	return e, nil
}

// serverKey names a cached server: what its tools/list shows depends on these alone.
type serverKey struct {
	perms    perm.Set
	toolsets selection
	readOnly bool
}

// serverFor returns the MCP server for the request's permission set and connection selection,
// building it on first use. The SDK calls it twice per request; both calls hit the cache.
func (e *Endpoint) serverFor(r *http.Request) *mcpsdk.Server {
	p, ok := principalFrom(r.Context())
	if !ok {
		return nil // unreachable behind authenticate; the SDK answers 400
	}
	conn, _ := connFrom(r.Context())
	k := serverKey{p.Perms, conn.Toolsets, conn.ReadOnly}
	if s, ok := e.servers.Load(k); ok {
		return s.(*mcpsdk.Server)
	}
	s, _ := e.servers.LoadOrStore(k, e.newServer(p.Perms, conn))
	return s.(*mcpsdk.Server)
}

func (e *Endpoint) newServer(perms perm.Set, conn Conn) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "chorus", Title: "Chorus", Version: e.version},
		&mcpsdk.ServerOptions{Instructions: instructions, Logger: sdkLogger(e.deps.Log),
			Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}, Prompts: &mcpsdk.PromptCapabilities{}},
			// The lists depend on the key: no shared cache may keep one for another caller.
			SetCacheable: func(_ context.Context, _ mcpsdk.Request, c *mcpsdk.Cacheable) { c.CacheScope = "private" }})
	listed := map[string]bool{}
	for _, t := range e.listed(perms, conn) {
		mt := t.tool
		if conn.ReadOnly && t.readOnlyTool != nil {
			mt = t.readOnlyTool
		}
		s.AddTool(mt, t.handler)
		listed[t.spec.Name] = true
	}
	addPrompts(s)
	addRefusalTool(s)
	s.AddReceivingMiddleware(e.refuseUnlisted(perms, listed))
	return s
}

// listed is the tools a connection with perms and conn lists, in table order.
func (e *Endpoint) listed(perms perm.Set, conn Conn) []*builtTool {
	var out []*builtTool
	for _, t := range e.tools {
		if conn.serves(perms, t.spec) {
			out = append(out, t)
		}
	}
	return out
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

// ToolNames lists the tools a permission set sees with every toolset selected, in table order.
func (e *Endpoint) ToolNames(perms perm.Set) []string {
	var out []string
	for _, t := range e.listed(perms, Conn{Toolsets: allToolsets}) {
		out = append(out, t.spec.Name)
	}
	return out
}

// refusalTool is registered on every server and never listed. A call to a tool the server does
// not list is routed to it (refuseUnlisted), so the refusal is built by the SDK's tools/call path
// like any other tool result and is valid on every protocol revision the server offers (from
// 2026-07-28 on, it carries resultType; case 09).
const refusalTool = "chorus_refused_call"

type refusalKey struct{}

// refuseCall is the refusal tool's handler: an isError result with the refusal that
// refuseUnlisted put in the context.
func refuseCall(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	err, ok := ctx.Value(refusalKey{}).(error)
	if !ok {
		err = toolNotFound(req.Params.Name)
	}
	msg, _ := agentMessage(err)
	return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: msg}},
		Meta: mcpsdk.Meta{refMetaKey: refFrom(ctx)}}, nil
}

// addRefusalTool registers the refusal tool on s.
func addRefusalTool(s *mcpsdk.Server) {
	s.AddTool(&mcpsdk.Tool{Name: refusalTool, InputSchema: &jsonschema.Schema{Type: "object"}}, refuseCall)
}

// refuseUnlisted answers a call to a tool this server does not list (docs/rules.md §3.3), and
// keeps the refusal tool out of tools/list. An unknown tool and one the key lacks the bit for get
// the same answer, so a key cannot probe what it lacks; a tool outside the connection's
// toolsets, or blocked by read-only mode, gets a sentence that says why. Each refusal keeps its
// answer and is logged and counted under its own kind, so an operator can tell why an agent
// could not call a tool (docs/agents.md "Agents and keys").
func (e *Endpoint) refuseUnlisted(perms perm.Set, listed map[string]bool) mcpsdk.Middleware {
	specs := map[string]toolSpec{}
	for _, t := range e.tools {
		specs[t.spec.Name] = t.spec
	}
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch method {
			case "tools/call":
				r, ok := req.(*mcpsdk.CallToolRequest)
				if !ok || r.Params == nil || listed[r.Params.Name] {
					break
				}
				name := r.Params.Name
				spec, known := specs[name]
				var err error
				kind, reason := KindUnknownTool, "no tool has this name"
				switch {
				case !known:
					err = toolNotFound(name)
				case !perms.Has(spec.Perm):
					err = toolNotFound(name)
					kind, reason = KindMissingPermission, "the key lacks "+spec.Perm.String()
				default:
					conn, _ := connFrom(ctx) // this request's: why it is read-only differs between requests
					err = conn.refusal(spec)
					_, kind = classify(err)
					reason = err.Error()
				}
				e.logRefusal(ctx, name, kind, reason)
				routed, params := *r, *r.Params
				params.Name = refusalTool
				routed.Params = &params
				return next(context.WithValue(ctx, refusalKey{}, err), method, &routed)
			case "tools/list":
				res, err := next(ctx, method, req)
				if l, ok := res.(*mcpsdk.ListToolsResult); ok {
					l.Tools = slices.DeleteFunc(l.Tools, func(t *mcpsdk.Tool) bool { return t.Name == refusalTool })
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// logRefusal records a call refused before any tool ran: a log line with the tool, the agent and
// the reason, and a count under its kind.
func (e *Endpoint) logRefusal(ctx context.Context, tool, kind, reason string) {
	e.deps.Metrics.refusal(kind)
	attrs := []any{"tool", clipped(tool), "kind", kind, "reason", reason, "ref", refFrom(ctx)}
	if p, ok := principalFrom(ctx); ok {
		attrs = append(attrs, "agent", p.Caller.AgentUUID, "agentName", p.Caller.AgentName, "key", p.KeyUUID)
	}
	e.deps.Log.InfoContext(ctx, "tool refused", attrs...)
}
