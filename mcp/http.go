package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// The HTTP edge of the MCP endpoint (SPEC 3.0; cases/02). Every answer a client, proxy or
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
//     MaxRequestBytes. Batches (JSON arrays) are refused: MCP 2025-06-18 removed them.
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
	codeInternalError  = -32603
)

const (
	corsMethods = "POST, OPTIONS"
	corsHeaders = "Content-Type, Authorization, mcp-protocol-version"
	// corsExpose lets browser clients read the auth challenge and the MCP headers.
	corsExpose = "WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version"
)

// Mount serves the endpoint on an echo server: /api/mcp, /api/mcp/ and everything below
// through the edge described above, and CORS preflights on every path of the server.
func (e *Endpoint) Mount(ech *echo.Echo) {
	ech.Pre(cors)
	for _, p := range []string{Path, Path + "/*"} {
		ech.Any(p, e.serve, e.authenticate)
	}
}

// cors answers preflights on every path and marks every other answer as readable cross-origin.
func cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if c.Request().Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "86400")
			return c.NoContent(http.StatusNoContent)
		}
		h.Set("Access-Control-Expose-Headers", corsExpose)
		return next(c)
	}
}

// serve runs behind authenticate: it routes by path and method, checks the request's shape,
// and hands it to the SDK handler matching what the client accepts.
func (e *Endpoint) serve(c echo.Context) error {
	req := c.Request()
	if rest := c.Param("*"); rest != "" {
		return rpcError(c, http.StatusNotFound, codeInvalidRequest, nil,
			fmt.Sprintf("Not found: there is nothing at %s; the MCP endpoint is %s", req.URL.Path, Path))
	}
	if req.Method != http.MethodPost {
		c.Response().Header().Set("Allow", corsMethods)
		return rpcError(c, http.StatusMethodNotAllowed, codeMethodNotFound, nil,
			"Method not allowed: stateless server has no sessions")
	}
	if msg, ok := checkContentType(req.Header.Get("Content-Type")); !ok {
		return rpcError(c, http.StatusUnsupportedMediaType, codeInvalidRequest, nil, msg)
	}
	req.Header.Set("Content-Type", "application/json")
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return rpcError(c, http.StatusRequestEntityTooLarge, codeInvalidRequest, nil, fmt.Sprintf(
				"Request too large: the body is over %d bytes (4 MiB), the limit of this endpoint; send less in one call",
				MaxRequestBytes))
		}
		return rpcError(c, http.StatusBadRequest, codeParseError, nil, "Parse error: the request body could not be read")
	}
	status, code, id, msg := checkMessage(body)
	if msg != "" {
		return rpcError(c, status, code, id, msg)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))

	jsonOK, streamOK := accepts(req.Header.Values("Accept"))
	handler := e.jsonHandler
	switch {
	case jsonOK:
	case streamOK:
		handler = e.streamHandler
	default:
		return rpcError(c, http.StatusNotAcceptable, codeInvalidRequest, nil,
			"Not acceptable: this endpoint answers application/json or text/event-stream; accept one of them")
	}
	// The SDK insists on both; the handler chosen above decides what the answer is.
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &rpcErrorWriter{ResponseWriter: c.Response(), id: id}
	handler.ServeHTTP(w, req)
	w.finish()
	return nil
}

// checkContentType accepts application/json in any case, with no charset or utf-8; a missing
// header is taken as JSON. It returns the refusal text otherwise.
func checkContentType(v string) (string, bool) {
	if strings.TrimSpace(v) == "" {
		return "", true
	}
	mt, params, err := mime.ParseMediaType(v)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8") {
			return "", true
		}
	}
	return fmt.Sprintf("Unsupported media type %q: send one JSON-RPC message as Content-Type: application/json (UTF-8)", v), false
}

// checkMessage accepts one JSON-RPC 2.0 request, notification or response. Otherwise it
// returns the HTTP status, JSON-RPC code, the message's id when it has a usable one, and the
// refusal text.
func checkMessage(body []byte) (status, code int, id json.RawMessage, msg string) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return http.StatusBadRequest, codeParseError, nil, "Parse error: the request body is not valid JSON"
	}
	if trimmed[0] == '[' {
		return http.StatusBadRequest, codeInvalidRequest, nil,
			"Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per POST"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(trimmed, &m) != nil {
		return http.StatusBadRequest, codeInvalidRequest, nil, "Invalid Request: the body must be a JSON-RPC 2.0 object"
	}
	if raw, ok := m["id"]; ok {
		var v any
		_ = json.Unmarshal(raw, &v)
		switch v.(type) {
		case string, float64:
			id = raw
		case nil:
		default:
			return http.StatusBadRequest, codeInvalidRequest, nil, `Invalid Request: "id" must be a string or a number`
		}
	}
	if string(bytes.TrimSpace(m["jsonrpc"])) != `"2.0"` {
		return http.StatusBadRequest, codeInvalidRequest, id, `Invalid Request: "jsonrpc" must be "2.0"`
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod && !hasResult && !hasError {
		return http.StatusBadRequest, codeInvalidRequest, id, `Invalid Request: "method" is missing`
	}
	return 0, 0, id, ""
}

// accepts reads Accept headers: whether application/json and whether text/event-stream is
// acceptable (media ranges and q=0 understood). No Accept header accepts anything.
func accepts(values []string) (jsonOK, streamOK bool) {
	seen := false
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
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			switch mt {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	if !seen {
		return true, true
	}
	return jsonOK, streamOK
}

// rpcError answers with a JSON-RPC error object.
func rpcError(c echo.Context, status, code int, id json.RawMessage, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	return c.JSON(status, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// rpcErrorWriter turns the SDK's plain-text error answers (an unknown method, an unsupported
// protocol version) into JSON-RPC error objects, so every refusal reads the same to every
// client. A request for a method the server does not have is answered like any JSON-RPC
// error to a request: HTTP 200, code -32601, the request's id.
type rpcErrorWriter struct {
	http.ResponseWriter
	id     json.RawMessage // of the request being served; nil for a notification
	status int
	plain  bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return // written as JSON when the body is complete
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.plain.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// finish writes the held-back error, if any, as a JSON-RPC error object.
func (w *rpcErrorWriter) finish() {
	if w.status == 0 {
		return
	}
	status, code, id := w.status, codeInvalidRequest, json.RawMessage("null")
	msg := strings.TrimSpace(w.plain.String())
	switch {
	case strings.HasPrefix(msg, "JSON RPC not handled") && w.id != nil:
		status, code, id = http.StatusOK, codeMethodNotFound, w.id
		msg = "Method not found" + strings.TrimPrefix(msg, "JSON RPC not handled")
	case status >= 500:
		code = codeInternalError
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("X-Content-Type-Options")
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(body)
}

// Flush lets server-sent events through.
func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
