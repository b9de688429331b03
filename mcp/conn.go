package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/chorus-dev/chorus/perm"
)

// What a connection selects (docs/rules.md §3.3), read from each request since the endpoint is
// stateless:
//
//   - toolsets: the header X-Chorus-Toolsets: develop,collab, or the path /api/mcp/x/develop,collab
//     (not both); core is always on; without either, the agent's presets choose (defaultSelection);
//   - read-only mode, which wins over everything: the header X-Chorus-Readonly: true, the path
//     /api/mcp/readonly (also /api/mcp/readonly/x/<toolsets>), or a read-only key.

// Headers a connection selects with.
const (
	ToolsetsHeader = "X-Chorus-Toolsets"
	ReadonlyHeader = "X-Chorus-Readonly"
)

// Conn is what one connection selected.
type Conn struct {
	// Toolsets are the toolsets on (core always is).
	Toolsets selection
	// ReadOnly: only tools that change nothing are listed and callable, and the tools with a
	// ReadOnlyForm change nothing.
	ReadOnly bool
	// readOnlyBy says what made the connection read-only: "key", "header" or "path".
	readOnlyBy string
}

type connKey struct{}

func withConn(ctx context.Context, c Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connFrom is the request's Conn; a request that did not come through the endpoint (a handler
// called directly) selects everything.
func connFrom(ctx context.Context) (Conn, bool) {
	c, ok := ctx.Value(connKey{}).(Conn)
	if !ok {
		return Conn{Toolsets: allToolsets}, false
	}
	return c, ok
}

// connOf reads the request's selection; sub is the path below /api/mcp ("", "x/develop",
// "readonly", "readonly/x/develop,collab", each with an optional trailing slash). It answers a
// refusal's HTTP status and text instead when the selection cannot be served: 404 for a path
// that is not one of these, 400 for an unknown toolset or a header value that means nothing.
func (e *Endpoint) connOf(r *http.Request, p Principal, sub string) (Conn, int, string) {
	var c Conn
	if p.ReadOnlyKey {
		c.ReadOnly, c.readOnlyBy = true, "key"
	}
	notFound := func() (Conn, int, string) {
		return Conn{}, http.StatusNotFound, fmt.Sprintf("Not found: there is nothing at %s; the MCP endpoint is %s "+
			"(also %s/x/<toolsets>, %s/readonly and %s/readonly/x/<toolsets>)", r.URL.Path, Path, Path, Path, Path)
	}
	rest := strings.TrimSuffix(sub, "/")
	if after, ok := strings.CutPrefix(rest, "readonly"); ok && (after == "" || after[0] == '/') {
		if !c.ReadOnly {
			c.ReadOnly, c.readOnlyBy = true, "path"
		}
		rest = strings.TrimPrefix(after, "/")
	}
	var pathList string
	if rest != "" {
		list, ok := strings.CutPrefix(rest+"/", "x/")
		list = strings.TrimSuffix(list, "/")
		if !ok || strings.Contains(list, "/") {
			return notFound()
		}
		if unescaped, err := url.PathUnescape(list); err == nil {
			list = unescaped
		}
		if strings.TrimSpace(strings.ReplaceAll(list, ",", "")) == "" {
			return Conn{}, http.StatusBadRequest, fmt.Sprintf("No toolset named in the path: write %s/x/<toolsets>, "+
				"comma-separated, from %s", Path, strings.Join(toolsetNames(), ", "))
		}
		pathList = list
	}
	headerList := strings.Join(r.Header.Values(ToolsetsHeader), ",")
	if strings.TrimSpace(strings.ReplaceAll(headerList, ",", "")) == "" {
		headerList = ""
	}
	if ro := r.Header.Values(ReadonlyHeader); len(ro) > 0 {
		switch v := strings.ToLower(strings.TrimSpace(strings.Join(ro, ","))); v {
		case "true":
			if !c.ReadOnly {
				c.ReadOnly, c.readOnlyBy = true, "header"
			}
		case "false", "":
		default:
			return Conn{}, http.StatusBadRequest, fmt.Sprintf("%s must be true or false, not %q", ReadonlyHeader, clipped(v))
		}
	}
	switch {
	case pathList != "" && headerList != "":
		return Conn{}, http.StatusBadRequest, fmt.Sprintf("Toolsets are named twice, in the path and in the %s header; "+
			"name them in one place", ToolsetsHeader)
	case pathList != "" || headerList != "":
		sel, err := parseSelection(pathList + headerList)
		if err != nil {
			where := ToolsetsHeader + " header"
			if pathList != "" {
				where = "path"
			}
			return Conn{}, http.StatusBadRequest, fmt.Sprintf("Bad toolset selection in the %s: %s", where, err)
		}
		c.Toolsets = sel
	default:
		c.Toolsets = defaultSelection(e.tools, p.Agent.Roles, p.Perms)
	}
	return c, 0, ""
}

// Refusal kinds of calls to tools a connection does not list (chorus_refusals_total, the
// "tool refused" log line).
const (
	// KindUnknownTool: no tool has that name.
	KindUnknownTool = "unknown_tool"
	// KindMissingPermission: the key lacks the tool's permission bit. The caller reads the same
	// answer as for an unknown tool, so a key cannot probe what it lacks.
	KindMissingPermission = "missing_permission"
	// KindOutsideToolsets: the tool is in a toolset the connection did not select.
	KindOutsideToolsets = "outside_toolsets"
	// KindReadOnly: the tool changes data and the connection is read-only.
	KindReadOnly = "read_only"
)

// refusal is the answer of a connection that does not serve spec's tool (read-only mode first,
// as it wins over everything), or nil when it does.
func (c Conn) refusal(spec toolSpec) error {
	if c.ReadOnly && !spec.servesReadOnly() {
		why := map[string]string{"key": "its key is read-only", "header": ReadonlyHeader + " is true",
			"path": "it uses the " + Path + "/readonly endpoint"}[c.readOnlyBy]
		if why == "" {
			why = "it is read-only"
		}
		return refuseAs(KindReadOnly, "%s changes data, and this connection cannot: %s; nothing was changed", spec.Name, why)
	}
	if !c.Toolsets.has(spec.Toolset) {
		return refuseAs(KindOutsideToolsets, "%s is in the %s toolset, which this connection has not selected; "+
			"select it with the %s header or the %s/x/<toolsets> path (for example %s: %s)",
			spec.Name, spec.Toolset, ToolsetsHeader, Path, ToolsetsHeader, c.Toolsets.with(spec.Toolset))
	}
	return nil
}

// serves reports whether a connection with c, holding perms, lists the tool.
func (c Conn) serves(perms perm.Set, spec toolSpec) bool {
	return perms.Has(spec.Perm) && c.refusal(spec) == nil
}
