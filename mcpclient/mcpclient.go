// Package mcpclient is Chorus's own MCP client, for `chorus mcp`, `chorus bench` and the tests
// that drive a running Chorus: a Streamable HTTP session that sends an agent's API key and the
// toolset selection headers (docs/rules.md §3.3), tool calls whose structuredContent is decoded
// into a Go value, and a tool's isError answer as a *ToolError. It imports mcp only for the
// header names.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/mcp"
)

// Agent is one agent's session: its own key and MCP session.
type Agent struct {
	Session *mcpsdk.ClientSession
}

// ToolError is a tool's isError answer: the tool and the text it answered.
type ToolError struct {
	Tool, Text string
}

func (e *ToolError) Error() string { return e.Tool + ": " + e.Text }

// pooled is shared by every Agent, with enough idle connections for a bench's agents.
var pooled = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	return tr
}()

// Connect opens a session to the MCP endpoint url (http://host:port/api/mcp) as the agent whose
// API key is key. It selects every toolset, so the agent reaches every tool its key permits,
// whatever its preset's default toolsets. client names the client in the MCP handshake.
func Connect(ctx context.Context, url, key string, client *mcpsdk.Implementation) (*Agent, error) {
	httpc := &http.Client{Timeout: 2 * time.Minute, Transport: &Transport{Key: key, Base: pooled,
		Header: http.Header{mcp.ToolsetsHeader: {"all"}}}}
	c := mcpsdk.NewClient(client, nil)
	s, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: httpc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	return &Agent{Session: s}, nil
}

// Close ends the session.
func (a *Agent) Close() error { return a.Session.Close() }

// Call calls a tool (within two minutes) and decodes its structured result into out (when not
// nil). A tool's isError answer is a *ToolError.
func (a *Agent) Call(ctx context.Context, tool string, args map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := a.Session.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return &ToolError{Tool: tool, Text: ResultText(res)}
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Field follows a dotted path (object keys, array indexes) into a decoded JSON value.
func Field(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[part]
			if !ok {
				return nil, fmt.Errorf("the result has no field %q (path %s)", part, path)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%q is not an index of a %d-item array (path %s)", part, len(x), path)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("cannot take %q of a %T (path %s)", part, v, path)
		}
	}
	return v, nil
}

// ResultText is the text of a tool result: its text contents, one per line.
func ResultText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Transport adds the bearer key (Key) and the selection headers (Header) and the selection headers, and turns a 401 (a bad key) or a
// 400 (a bad selection) into a readable error.
type Transport struct {
	Key    string
	Header http.Header
	Base   http.RoundTripper
}

// HTTPError is the endpoint's refusal of a request: a bad key (401) or a bad selection (400);
// Body is its message.
type HTTPError struct{ Body string }

func (e *HTTPError) Error() string { return e.Body }

// RoundTrip sends r with the key and the headers through Base.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.Key)
	for k, v := range t.Header {
		r.Header[k] = v
	}
	resp, err := t.Base.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusBadRequest) {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := strings.TrimSpace(string(bytes.TrimSpace(b)))
		var rpc struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &rpc) == nil && rpc.Error.Message != "" {
			body = rpc.Error.Message
		}
		return nil, &HTTPError{Body: body}
	}
	return resp, err
}
