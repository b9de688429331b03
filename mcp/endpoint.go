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

const instructions = `Chorus tracks software delivery for teams of agents: ideas are claimed and clarified
through elaboration rounds, turned into proposals of document and task drafts, approved into real
tasks, then claimed, worked, self-checked, submitted and verified. Call chorus_checkin first to
learn who you are, what you may do, and which projects you are active in. Every mutating tool takes
an optional requestId: reuse it when you retry so nothing happens twice.`

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
}

// NewEndpoint builds every tool of the table once. version is reported in serverInfo.
func NewEndpoint(d *Deps, version string) (*Endpoint, error) {
	e := &Endpoint{deps: d, version: version}
	if d.Flows != nil && d.Flows.Applied == nil && d.Store != nil {
		d.Flows.Applied = d.Store.UpdateApplied // a retried call's update is not applied twice
	}
	for _, t := range toolTable() {
		bt, err := t.build(d)
		if err != nil {
			return nil, err
		}
		e.tools = append(e.tools, bt)
	}
	for _, asJSON := range []bool{true, false} {
		h := mcpsdk.NewStreamableHTTPHandler(e.serverFor, &mcpsdk.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: asJSON,
			Logger:       sdkLogger(d.Log),
			// Every request carries a bearer key, so the DNS-rebinding guard for unauthenticated
			// localhost servers does not apply; leaving it on would refuse proxied requests.
			DisableLocalhostProtection: true,
			MaxRequestBodyBytes:        MaxRequestBytes, // the edge (http.go) already holds bodies to this
		})
		if asJSON {
			e.jsonHandler = h
		} else {
			e.streamHandler = h
		}
	}
	return e, nil
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
	addRefusalTool(s)
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

// refusalTool is registered on every server and never listed. A call to a tool the server does
// not list is routed to it (hideUnlisted), so the refusal is built by the SDK's tools/call path
// like any other tool result and is valid on every protocol revision the server offers (from
// 2026-07-28 on, it carries resultType; case 09).
const refusalTool = "chorus_refused_call"

type refusalKey struct{}

// refuseCall is the refusal tool's handler: an isError result with the refusal that
// hideUnlisted put in the context.
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

// hideUnlisted answers a call to a tool this server does not list with the same isError result
// for unknown and for permission-hidden tools, so a key cannot probe what it lacks (docs/rules.md
// §3.3), and keeps the refusal tool out of tools/list.
func hideUnlisted(allowed map[string]bool) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch method {
			case "tools/call":
				r, ok := req.(*mcpsdk.CallToolRequest)
				if !ok || r.Params == nil || allowed[r.Params.Name] {
					break
				}
				routed, params := *r, *r.Params
				params.Name = refusalTool
				routed.Params = &params
				return next(context.WithValue(ctx, refusalKey{}, toolNotFound(r.Params.Name)), method, &routed)
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
