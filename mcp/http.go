package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// The HTTP edge of the MCP endpoint (docs/rules.md §3.1; mcp/transport_test.go). Every answer a client, proxy or
// browser can get here is one the MCP specification and its clients expect:
//
//   - OPTIONS on any path is a CORS preflight: 204 with the CORS headers, no key needed;
//     every other answer carries Access-Control-Allow-Origin and exposes WWW-Authenticate.
//   - Any other method on /api/mcp, /api/mcp/ or below needs a key first: without one the
//     answer is 401 with a WWW-Authenticate challenge, whatever the method or path.
//   - With a key, /api/mcp and /api/mcp/ are the same endpoint (no redirect); deeper paths
//     are 404; methods other than POST are 405 (a stateless server has no streams or sessions).
//   - A POST must be one JSON-RPC 2.0 message in JSON (Content-Type application/json, any
//     case, charset utf-8 if one is given; a missing Content-Type is taken as JSON) of at most
//     MaxRequestBytes, nesting objects and arrays at most maxNesting levels deep. Batches (JSON
//     arrays) are refused: MCP 2025-06-18 removed them.
//   - The answer is JSON when the client accepts application/json (or sends no Accept), a
//     single server-sent event when it accepts only text/event-stream, else 406.
//
// Every refusal is a JSON-RPC error object in a JSON body: code -32700 for a body that is not
// JSON, -32600 for everything else that is not a request this endpoint serves; the HTTP status
// says which (400, 404, 405, 406, 413, 415).

// MaxRequestBytes is the largest request body the MCP endpoint reads: 4 MiB. A larger one is
// refused with HTTP 413 and a JSON-RPC error before anything runs.
const MaxRequestBytes = 4 << 20

const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

const (
	corsMethods = "POST, OPTIONS"
	corsHeaders = "Content-Type, Authorization, mcp-protocol-version, " + ToolsetsHeader + ", " + ReadonlyHeader
	// corsExpose lets browser clients read the auth challenge and the MCP headers.
	corsExpose = "WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version"
)

// Mount serves the endpoint on an echo server: /api/mcp, /api/mcp/ and everything below
// through the edge described above, and, on every path of the server, the Host check and CORS
// preflights (edge.go). Every route of the MCP group passes, in order, the Origin check, the
// per-key and per-company limits (limits.go: limitKnown before the key is looked up, limit
// after, for a key seen for the first time) and the key (authenticate): a path added to the
// endpoint is added to the group, never beside it.
func (e *Endpoint) Mount(ech *echo.Echo) {
	ech.Pre(checkHost(e.deps.Edge, e.deps.Metrics), e.cors)
	g := ech.Group(Path, e.checkOrigin, e.limitKnown, e.authenticate, e.limit)
	g.Any("", e.serve)
	g.Any("/*", e.serve)
}

// serve runs behind authenticate: it routes by path and method, checks the request's shape,
// and hands it to the SDK handler matching what the client accepts.
func (e *Endpoint) serve(c echo.Context) error {
	req := c.Request()
	p, _ := principalFrom(req.Context())
	conn, status, why := e.connOf(req, p, c.Param("*"))
	if why != "" {
		return rpcError(c, status, codeInvalidRequest, nil, why)
	}
	req = req.WithContext(withConn(req.Context(), conn))
	if req.Method != http.MethodPost {
		c.Response().Header().Set("Allow", corsMethods)
		return rpcError(c, http.StatusMethodNotAllowed, codeMethodNotFound, nil,
			"Method not allowed: stateless server has no sessions")
	}
	if msg, ok := checkContentType(req.Header); !ok {
		return rpcError(c, http.StatusUnsupportedMediaType, codeInvalidRequest, nil, msg)
	}
	req.Header.Set("Content-Type", "application/json")
	tooLarge := fmt.Sprintf("Request too large: the body is over %d bytes (4 MiB), the limit of this endpoint; "+
		"send less in one call", MaxRequestBytes)
	if req.ContentLength > MaxRequestBytes {
		return rpcError(c, http.StatusRequestEntityTooLarge, codeInvalidRequest, nil, tooLarge)
	}
	jsonOK, streamOK := accepts(req.Header.Values("Accept"))
	if !jsonOK && !streamOK {
		return rpcError(c, http.StatusNotAcceptable, codeInvalidRequest, nil,
			"Not acceptable: this endpoint answers application/json or text/event-stream; accept one of them")
	}
	asEvents := !jsonOK
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, MaxRequestBytes))
	if err != nil {
		var over *http.MaxBytesError
		if errors.As(err, &over) {
			return rpcError(c, http.StatusRequestEntityTooLarge, codeInvalidRequest, nil, tooLarge)
		}
		return rpcError(c, http.StatusBadRequest, codeParseError, nil, "Parse error: the request body could not be read")
	}
	msg, bad := readMessage(body)
	if bad != nil {
		if bad.status == http.StatusOK { // a request we can answer, with its id
			return writeRPC(c.Response(), http.StatusOK, asEvents, bad.id, bad.code, bad.msg)
		}
		return rpcError(c, bad.status, bad.code, bad.id, bad.msg)
	}
	if msg.numericID {
		body = swapID(body, []byte(edgeID))
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	// A key's mutating calls take turns (Limits.KeyWrites): this one waits for its key's turn.
	if e.limits != nil && e.mutating[msg.tool] {
		if hash, ok := req.Context().Value(limitKey{}).(string); ok {
			release, err := e.limits.writeTurn(req.Context(), hash)
			if err != nil {
				return nil // the client went away while waiting: nothing ran
			}
			defer release()
		}
	}

	handler := e.jsonHandler
	if asEvents {
		handler = e.streamHandler
	}
	// The SDK insists on both; the handler chosen above decides what the answer is.
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &rewriter{ResponseWriter: c.Response(), msg: msg, asEvents: asEvents}
	handler.ServeHTTP(w, req)
	w.finish()
	return nil
}

// checkContentType accepts one Content-Type of application/json in any case, with no charset or
// utf-8 (a missing one is taken as JSON), and no Content-Encoding. It returns the refusal text
// otherwise.
func checkContentType(h http.Header) (string, bool) {
	if enc := h.Values("Content-Encoding"); len(enc) > 0 && !(len(enc) == 1 && strings.EqualFold(strings.TrimSpace(enc[0]), "identity")) {
		return fmt.Sprintf("Unsupported Content-Encoding %q: send the JSON-RPC message uncompressed", strings.Join(enc, ", ")), false
	}
	types := h.Values("Content-Type")
	if len(types) > 1 {
		return "Unsupported media type: the request has more than one Content-Type header; send one, application/json", false
	}
	if len(types) == 0 || strings.TrimSpace(types[0]) == "" {
		return "", true
	}
	mt, params, err := mime.ParseMediaType(types[0])
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8") {
			return "", true
		}
	}
	return fmt.Sprintf("Unsupported media type %q: send one JSON-RPC message as Content-Type: application/json (UTF-8)", types[0]), false
}

// message is what the edge knows of the JSON-RPC message it passes on.
type message struct {
	id     json.RawMessage // nil for a notification or a response
	method string
	tool   string // the tool a tools/call names
	// numericID: id is a number, which the SDK would read into an int64 or a float64 and so
	// could not give back as sent; it is swapped for edgeID on the way in and back on the way out.
	numericID bool
}

// edgeID stands for a numeric request id while the SDK handles the request (message.numericID).
const edgeID = `"chorus-edge-id"`

// refusal is an answer the edge gives itself. Status 200 means the message is a request whose
// id is known, so the answer is a JSON-RPC error response to it.
type refusal struct {
	status, code int
	id           json.RawMessage
	msg          string
}

// integerID is a JSON integer literal of any size (JSON-RPC 2.0: numbers should not contain
// fractional parts); it comes back byte for byte (message.numericID).
var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// readMessage accepts one JSON-RPC 2.0 request, notification or response whose envelope the
// methods served here can read (see checkParams); otherwise it says why not.
func readMessage(body []byte) (message, *refusal) {
	var m message
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return m, &refusal{http.StatusBadRequest, codeParseError, nil, "Parse error: the request body is not valid JSON"}
	}
	if nesting(trimmed) > maxNesting {
		return m, &refusal{http.StatusBadRequest, codeInvalidRequest, nil, fmt.Sprintf(
			"Invalid Request: the message nests objects and arrays more than %d levels deep; send a flatter one", maxNesting)}
	}
	if trimmed[0] == '[' {
		return m, &refusal{http.StatusBadRequest, codeInvalidRequest, nil,
			"Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per POST"}
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(trimmed, &env) != nil {
		return m, &refusal{http.StatusBadRequest, codeInvalidRequest, nil, "Invalid Request: the body must be a JSON-RPC 2.0 object"}
	}
	if raw, ok := env["id"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		_ = d.Decode(&v)
		switch x := v.(type) {
		case string:
			m.id = raw
		case json.Number:
			if !integerID.MatchString(x.String()) {
				return m, &refusal{http.StatusBadRequest, codeInvalidRequest, nil, fmt.Sprintf(
					`Invalid Request: "id" must be a string or a whole number, got %s`, clipped(x.String()))}
			}
			m.id, m.numericID = bytes.TrimSpace(raw), true
		default:
			return m, &refusal{http.StatusBadRequest, codeInvalidRequest, nil, `Invalid Request: "id" must be a string or a number`}
		}
	}
	if string(bytes.TrimSpace(env["jsonrpc"])) != `"2.0"` {
		return m, &refusal{http.StatusBadRequest, codeInvalidRequest, m.id, `Invalid Request: "jsonrpc" must be "2.0"`}
	}
	rawMethod, hasMethod := env["method"]
	_, hasResult := env["result"]
	_, hasError := env["error"]
	switch {
	case hasMethod:
		if json.Unmarshal(rawMethod, &m.method) != nil || m.method == "" {
			return m, &refusal{http.StatusBadRequest, codeInvalidRequest, m.id, `Invalid Request: "method" must be a non-empty string`}
		}
	case hasResult || hasError:
		m.id = nil // a response from the client: nothing to answer
		return m, nil
	default:
		return m, &refusal{http.StatusBadRequest, codeInvalidRequest, m.id, `Invalid Request: "method" is missing`}
	}
	if msg := checkParams(m.method, env["params"]); msg != "" {
		if m.id == nil {
			return m, &refusal{http.StatusBadRequest, codeInvalidParams, nil, msg}
		}
		return m, &refusal{http.StatusOK, codeInvalidParams, m.id, msg}
	}
	if m.method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(env["params"], &p) // checkParams held it to an object with a string name
		m.tool = p.Name
	}
	return m, nil
}

// maxNesting is how deeply a message may nest objects and arrays: far more than any tool's
// arguments need (about six levels), and refused here in plain words before the SDK's decoder
// meets it (docs/rules.md §3.1).
const maxNesting = 64

// nesting returns how deeply valid JSON nests objects and arrays.
func nesting(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// checkParams holds the params of the methods this server answers to the shapes MCP defines, so
// that a malformed one is refused in plain words rather than by the SDK's decoder.
func checkParams(method string, raw json.RawMessage) string {
	var p map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if json.Unmarshal(raw, &p) != nil {
			return fmt.Sprintf("Invalid params: the params of %s must be an object", method)
		}
	}
	kind := func(name string) string { // "", "null", "string", "object", "other"
		v, ok := p[name]
		if !ok {
			return ""
		}
		switch t := bytes.TrimSpace(v); {
		case string(t) == "null":
			return "null"
		case len(t) > 0 && t[0] == '"':
			return "string"
		case len(t) > 0 && t[0] == '{':
			return "object"
		}
		return "other"
	}
	if k := kind("_meta"); k != "" && k != "object" {
		return fmt.Sprintf("Invalid params: params._meta of %s must be an object", method)
	}
	switch method {
	case "tools/call":
		if kind("name") != "string" || string(bytes.TrimSpace(p["name"])) == `""` {
			return "Invalid params: tools/call needs params.name, the tool's name (a string)"
		}
		if k := kind("arguments"); k != "" && k != "null" && k != "object" {
			return "Invalid params: params.arguments of tools/call must be an object of the tool's arguments"
		}
	case "tools/list":
		if k := kind("cursor"); k != "" && k != "null" && k != "string" {
			return "Invalid params: params.cursor of tools/list must be a string (the nextCursor of the previous page)"
		}
	case "initialize":
		if kind("protocolVersion") != "string" {
			return "Invalid params: initialize needs params.protocolVersion, a string such as \"2025-06-18\""
		}
		if kind("capabilities") != "object" {
			return "Invalid params: initialize needs params.capabilities, an object (it may be empty)"
		}
		var info map[string]json.RawMessage
		if kind("clientInfo") != "object" || json.Unmarshal(p["clientInfo"], &info) != nil ||
			!isJSONString(info["name"]) || !isJSONString(info["version"]) {
			return "Invalid params: initialize needs params.clientInfo, an object with name and version strings"
		}
	}
	return ""
}

func isJSONString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil
}

// accepts reads Accept headers: whether application/json and whether text/event-stream is
// acceptable. For each, the most specific media range that matches decides (so
// "application/json;q=0, */*" refuses JSON); no Accept header accepts anything.
func accepts(values []string) (jsonOK, streamOK bool) {
	// q of the most specific range matching each type: exact 2, type/* 1, */* 0.
	type best struct {
		rank int
		q    float64
	}
	js, sse := best{-1, 0}, best{-1, 0}
	seen := false
	consider := func(b *best, rank int, q float64) {
		if rank > b.rank {
			*b = best{rank, q}
		}
	}
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if strings.TrimSpace(item) == "" {
				continue
			}
			seen = true
			mt, params, err := mime.ParseMediaType(item)
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					q = f
				}
			}
			switch mt {
			case "application/json":
				consider(&js, 2, q)
			case "application/*":
				consider(&js, 1, q)
			case "text/event-stream":
				consider(&sse, 2, q)
			case "text/*":
				consider(&sse, 1, q)
			case "*/*":
				consider(&js, 0, q)
				consider(&sse, 0, q)
			}
		}
	}
	if !seen {
		return true, true
	}
	return js.rank >= 0 && js.q > 0, sse.rank >= 0 && sse.q > 0
}

// rpcError answers with a JSON-RPC error object in a JSON body.
func rpcError(c echo.Context, status, code int, id json.RawMessage, msg string) error {
	return writeRPC(c.Response(), status, false, id, code, msg)
}

// writeRPC writes a JSON-RPC error object as JSON, or as one server-sent event for a client
// that takes only those.
func writeRPC(w http.ResponseWriter, status int, asEvent bool, id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	if asEvent && status == http.StatusOK {
		h.Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		_, err = fmt.Fprintf(w, "event: message\ndata: %s\n\n", body)
		return err
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(body, '\n'))
	return err
}
