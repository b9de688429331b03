package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// The HTTP edge as clients, proxies and browsers meet it (http.go).

type answer struct {
	status int
	header http.Header
	body   string
}

// rpcErr is the error member of a JSON-RPC error answer.
func (a answer) rpcErr(t *testing.T) (code int, msg string) {
	t.Helper()
	require.Contains(t, a.header.Get("Content-Type"), "application/json", "error answers are JSON: %s", a.body)
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &m), a.body)
	require.Equal(t, "2.0", m.JSONRPC, a.body)
	require.NotNil(t, m.Error, "a JSON-RPC error object: %s", a.body)
	return m.Error.Code, m.Error.Message
}

// send makes one HTTP request to the test server without following redirects.
func (e *env) send(method, path string, header map[string]string, body string) answer {
	e.t.Helper()
	base := strings.TrimSuffix(e.url, Path)
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(e.t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

func TestAuthChallengeComesFirst(t *testing.T) {
	e := newEnv(t, "sqlite")
	for _, path := range []string{Path, Path + "/", Path + "/sse", Path + "/a/b"} {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch} {
			a := e.send(method, path, map[string]string{"Accept": "text/event-stream"}, "")
			require.Equal(t, http.StatusUnauthorized, a.status, "%s %s: %s", method, path, a.body)
			require.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer", "%s %s", method, path)
			require.Equal(t, "*", a.header.Get("Access-Control-Allow-Origin"), "%s %s", method, path)
			require.Contains(t, a.header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate", "browsers may read the challenge")
		}
	}
	// With a key: methods other than POST are 405, deeper paths 404, each as JSON-RPC errors.
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey}
	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		a := e.send(method, Path, auth, "")
		require.Equal(t, http.StatusMethodNotAllowed, a.status, method)
		require.Equal(t, "POST, OPTIONS", a.header.Get("Allow"))
		code, msg := a.rpcErr(t)
		require.Equal(t, -32601, code)
		require.Equal(t, "Method not allowed: stateless server has no sessions", msg)
	}
	a := e.send(http.MethodPost, Path+"/tools", auth, listBody)
	require.Equal(t, http.StatusNotFound, a.status)
	code, msg := a.rpcErr(t)
	require.Equal(t, -32600, code)
	require.Contains(t, msg, "the MCP endpoint is /api/mcp")
}

func TestTrailingSlashIsTheSameEndpoint(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey, "Content-Type": "application/json"}
	plain := e.send(http.MethodPost, Path, auth, listBody)
	slash := e.send(http.MethodPost, Path+"/", auth, listBody)
	require.Equal(t, http.StatusOK, slash.status, slash.body)
	require.Empty(t, slash.header.Get("Location"))
	require.JSONEq(t, plain.body, slash.body)
}

func TestBatchesAreRefusedAndRunNothing(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey, "Content-Type": "application/json"}
	create := func(id int, name string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chorus_admin_create_project","arguments":{"name":%q}}}`, id, name)
	}
	for _, body := range []string{"[" + create(1, "A") + "," + create(2, "B") + "]", "[" + create(3, "C") + "]", "[]"} {
		a := e.send(http.MethodPost, Path, auth, body)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		code, msg := a.rpcErr(t)
		require.Equal(t, -32600, code)
		require.Contains(t, msg, "batches are not supported")
	}
	var list ProjectList
	ok(t, e.client(e.adminKey), "chorus_list_projects", nil, &list)
	require.Equal(t, 0, list.Total, "no call of a refused batch ran")
}

func TestBodyLimitIsOneDocumentedJSONRPCError(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey, "Content-Type": "application/json"}
	callWith := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chorus_admin_create_project","arguments":{"name":"` + name + `"}}}`
	}
	over := callWith(strings.Repeat("x", MaxRequestBytes))
	a := e.send(http.MethodPost, Path, auth, over)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	code, msg := a.rpcErr(t)
	require.Equal(t, -32600, code)
	require.Contains(t, msg, "4194304 bytes (4 MiB)")

	// Just under the limit the body is read and the tool answers for itself.
	under := callWith(strings.Repeat("x", MaxRequestBytes-len(callWith(""))))
	require.Len(t, under, MaxRequestBytes)
	a = e.send(http.MethodPost, Path+"/x/projects", auth, under)
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.body, "name must be at most 200 characters long")

	var list ProjectList
	ok(t, e.client(e.adminKey), "chorus_list_projects", nil, &list)
	require.Equal(t, 0, list.Total)
}

func TestMalformedMessagesGetJSONRPCErrors(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey, "Content-Type": "application/json"}
	cases := []struct {
		body   string
		code   int
		phrase string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700, "not valid JSON"},
		{``, -32700, "not valid JSON"},
		{`"tools/list"`, -32600, "must be a JSON-RPC 2.0 object"},
		{`{"id":1,"method":"tools/list"}`, -32600, `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":1}`, -32600, `"method" is missing`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600, `"id" must be a string or a number`},
	}
	for _, c := range cases {
		a := e.send(http.MethodPost, Path, auth, c.body)
		require.Equal(t, http.StatusBadRequest, a.status, c.body)
		code, msg := a.rpcErr(t)
		require.Equal(t, c.code, code, c.body)
		require.Contains(t, msg, c.phrase, c.body)
	}
	// An unknown method is a JSON-RPC error answering the request, with its id.
	a := e.send(http.MethodPost, Path, auth, `{"jsonrpc":"2.0","id":9,"method":"no/such/method"}`)
	require.Equal(t, http.StatusOK, a.status)
	code, msg := a.rpcErr(t)
	require.Equal(t, -32601, code)
	require.Equal(t, `Method not found: this server does not answer "no/such/method"`, msg)
	require.Contains(t, a.body, `"id":9`)
	// A notification is accepted with no body.
	a = e.send(http.MethodPost, Path, auth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, a.status)
	// An unsupported protocol version is refused by the SDK; the answer is still JSON-RPC.
	a = e.send(http.MethodPost, Path, map[string]string{"Authorization": "Bearer " + e.adminKey,
		"Mcp-Protocol-Version": "1999-01-01"}, listBody)
	require.Equal(t, http.StatusBadRequest, a.status)
	code, msg = a.rpcErr(t)
	require.Equal(t, -32600, code)
	require.Contains(t, msg, "protocol version")
}

func TestContentTypesAndAcceptVariants(t *testing.T) {
	e := newEnv(t, "sqlite")
	key := "Bearer " + e.adminKey
	served := []map[string]string{
		{},
		{"Content-Type": "application/json; charset=utf-8"},
		{"Content-Type": "Application/JSON"},
		{"Accept": "application/json"},
		{"Accept": "*/*"},
		{"Accept": "application/*"},
		{"Accept": "text/html, application/json;q=0.5"},
		{"Accept": "application/json, text/event-stream"},
		{"Accept": "APPLICATION/JSON"},
	}
	for _, h := range served {
		h["Authorization"] = key
		a := e.send(http.MethodPost, Path, h, listBody)
		require.Equal(t, http.StatusOK, a.status, "%v: %s", h, a.body)
		require.Contains(t, a.header.Get("Content-Type"), "application/json", "%v", h)
		require.Contains(t, a.body, `"chorus_checkin"`, "%v", h)
	}
	// A client that takes only server-sent events gets its answer as one event.
	a := e.send(http.MethodPost, Path, map[string]string{"Authorization": key, "Accept": "text/event-stream"}, listBody)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.header.Get("Content-Type"), "text/event-stream")
	require.Contains(t, eventData(a.body), `"chorus_checkin"`, a.body)

	refused := []struct {
		header map[string]string
		status int
		phrase string
	}{
		{map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, "Unsupported media type"},
		{map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "Unsupported media type"},
		{map[string]string{"Content-Type": "application/json; charset=latin1"}, http.StatusUnsupportedMediaType, "UTF-8"},
		{map[string]string{"Accept": "text/html"}, http.StatusNotAcceptable, "Not acceptable"},
		{map[string]string{"Accept": "application/json;q=0"}, http.StatusNotAcceptable, "Not acceptable"},
	}
	for _, r := range refused {
		r.header["Authorization"] = key
		a := e.send(http.MethodPost, Path, r.header, listBody)
		require.Equal(t, r.status, a.status, "%v: %s", r.header, a.body)
		_, msg := a.rpcErr(t)
		require.Contains(t, msg, r.phrase)
	}
}

// eventData returns the data of the first server-sent event in body.
func eventData(body string) string {
	for line := range strings.SplitSeq(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return d
		}
	}
	return ""
}

func TestPreflightOnEveryPath(t *testing.T) {
	e := newEnv(t, "sqlite")
	for _, path := range []string{Path, Path + "/", Path + "/x", "/healthz", "/anything/else"} {
		a := e.send(http.MethodOptions, path, map[string]string{"Origin": "http://localhost:6274",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}, "")
		require.Equal(t, http.StatusNoContent, a.status, path)
		require.Equal(t, "*", a.header.Get("Access-Control-Allow-Origin"), path)
		require.Equal(t, "POST, OPTIONS", a.header.Get("Access-Control-Allow-Methods"), path)
		require.Equal(t, "Content-Type, Authorization, mcp-protocol-version, X-Chorus-Toolsets, X-Chorus-Readonly", a.header.Get("Access-Control-Allow-Headers"), path)
	}
}

// A browser-style client (no Go SDK) can still drive the endpoint with plain fetches.
func TestPlainHTTPClientCallsATool(t *testing.T) {
	e := newEnv(t, "sqlite")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "a1", "method": "tools/call",
		"params": map[string]any{"name": "chorus_checkin", "arguments": map[string]any{}}})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+"/", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.adminKey)
	req.Header.Set("Origin", "http://localhost:6274")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	var m struct {
		ID     string `json:"id"`
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Equal(t, "a1", m.ID)
	require.Contains(t, m.Result.StructuredContent, "agent")
}

// Envelopes the SDK's decoder would refuse in Go's words are refused in plain ones, as JSON-RPC
// errors answering the request (HTTP 200, its id); ids come back exactly as sent.
func TestEnvelopeErrorsAreJSONRPCInPlainWords(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := map[string]string{"Authorization": "Bearer " + e.adminKey}
	goWords := []string{"Go value", "Go struct", "mcp.", "jsonrpc2", "cannot unmarshal", "of type"}
	cases := []struct {
		body   string
		status int
		code   int
		phrase string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, 200, -32602, "params of tools/list must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, 200, -32602, "tools/call needs params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, 200, -32602, "tools/call needs params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 200, -32602, "tools/call needs params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chorus_checkin","arguments":[]}}`, 200, -32602, "arguments of tools/call must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}`, 200, -32602, "cursor of tools/list must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":"x"}}`, 200, -32602, "_meta of tools/list must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, 200, -32602, "protocolVersion"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":5},"clientInfo":{"name":"x","version":"1"}}}`, 200, -32602, "does not have the shape MCP defines"},
		{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":5}}`, 200, -32602, "does not have the shape MCP defines"},
		{`{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`, 200, -32600, `unexpected id for "notifications/initialized"`},
		{`{"jsonrpc":"2.0","method":"notifications/nope"}`, 400, -32601, "does not take the notification"},
		{`{"jsonrpc":"2.0","id":1,"method":null}`, 400, -32600, `"method" must be a non-empty string`},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, 400, -32600, `"method" must be a non-empty string`},
	}
	for _, c := range cases {
		a := e.send(http.MethodPost, Path, auth, c.body)
		require.Equal(t, c.status, a.status, "%s: %s", c.body, a.body)
		code, msg := a.rpcErr(t)
		require.Equal(t, c.code, code, "%s: %s", c.body, msg)
		require.Contains(t, msg, c.phrase, c.body)
		for _, w := range goWords {
			require.NotContains(t, msg, w, "%s leaks Go internals: %s", c.body, msg)
		}
		if c.status == 200 {
			var m struct{ ID json.RawMessage }
			require.NoError(t, json.Unmarshal([]byte(a.body), &m))
			require.NotEqual(t, "null", string(m.ID), "a refusal of a request answers its id: %s", a.body)
		}
	}
	for _, id := range []string{`1.5`, `-2.7`, `1e20`, `1.0`, `true`, `[1]`, `{}`} {
		a := e.send(http.MethodPost, Path, auth, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		require.Equal(t, http.StatusBadRequest, a.status, "id %s: %s", id, a.body)
		code, _ := a.rpcErr(t)
		require.Equal(t, -32600, code, id)
	}
	// Issue 19: any JSON integer comes back byte for byte, beyond int64 and float64 too, on
	// results and on errors, as JSON and as an event.
	for _, id := range []string{`"abc"`, `0`, `-0`, `-7`, `9007199254740991`, `9007199254740993`, `9223372036854775807`,
		`-9223372036854775809`, `123456789012345678901234567890123`} {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"chorus_checkin","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"chorus_get_task","arguments":{"taskUuid":"x"}}}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"no/such/method"}`,
		} {
			a := e.send(http.MethodPost, Path, auth, body)
			require.Equal(t, http.StatusOK, a.status, "%s: %s", body, a.body)
			var m struct{ ID json.RawMessage }
			require.NoError(t, json.Unmarshal([]byte(a.body), &m), a.body)
			require.Equal(t, id, string(m.ID), "the id comes back exactly: %s", a.body)
			ev := e.send(http.MethodPost, Path, map[string]string{"Authorization": "Bearer " + e.adminKey, "Accept": "text/event-stream"}, body)
			require.NoError(t, json.Unmarshal([]byte(eventData(ev.body)), &m), ev.body)
			require.Equal(t, id, string(m.ID), "the id comes back exactly in an event: %s", ev.body)
		}
	}
	// An SSE-only client gets its refusal as an event too.
	a := e.send(http.MethodPost, Path, map[string]string{"Authorization": "Bearer " + e.adminKey, "Accept": "text/event-stream"},
		`{"jsonrpc":"2.0","id":5,"method":"foo/bar"}`)
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.header.Get("Content-Type"), "text/event-stream")
	require.Contains(t, eventData(a.body), `"code":-32601`)
	require.Contains(t, eventData(a.body), `"id":5`)
}

func TestHeaderEdges(t *testing.T) {
	e := newEnv(t, "sqlite")
	key := "Bearer " + e.adminKey
	// The most specific Accept range decides: JSON refused outright, events accepted.
	a := e.send(http.MethodPost, Path, map[string]string{"Authorization": key, "Accept": "application/json;q=0, */*"}, listBody)
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.header.Get("Content-Type"), "text/event-stream")
	// Compressed bodies are refused rather than read as garbage.
	a = e.send(http.MethodPost, Path, map[string]string{"Authorization": key, "Content-Encoding": "gzip"}, listBody)
	require.Equal(t, http.StatusUnsupportedMediaType, a.status)
	_, msg := a.rpcErr(t)
	require.Contains(t, msg, "Content-Encoding")

	// Two Content-Type headers, or two credentials, are refused, never guessed between.
	for _, h := range []struct {
		name   string
		values []string
		status int
	}{
		{"Content-Type", []string{"application/json", "text/plain"}, http.StatusUnsupportedMediaType},
		{"Authorization", []string{key, "Bearer " + store.GenerateKey()}, http.StatusUnauthorized},
		{"Authorization", []string{"Bearer " + store.GenerateKey(), key}, http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(listBody))
		require.NoError(t, err)
		req.Header.Set("Authorization", key)
		req.Header.Del(h.name)
		for _, v := range h.values {
			req.Header.Add(h.name, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, h.status, resp.StatusCode, "two %s headers", h.name)
	}
}

// A declared body over the limit is refused as soon as the headers arrive, before any body.
func TestDeclaredOversizeBodyIsRefusedAtOnce(t *testing.T) {
	e := newEnv(t, "sqlite")
	u, err := url.Parse(e.url)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n{", Path, u.Host, e.adminKey, MaxRequestBytes+1)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the server should answer without waiting for the body")
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}
