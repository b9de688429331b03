package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// The answers of the HTTP edge (http.go): the SDK's answer to a message, held back and
// reworded so every refusal reads the same to every client.

// rewriter holds back the SDK's answer to one message and makes every refusal in it read the
// same to every client:
//
//   - plain-text errors (an unknown method, an unsupported protocol version) become JSON-RPC
//     error objects; one that answers a request with an id is a JSON-RPC error response to it,
//     with HTTP 200 (an unknown method is -32601);
//   - a JSON-RPC error whose text shows the SDK's Go internals, or whose code is not a JSON-RPC
//     code, is reworded.
//
// Answers are small (one message; tool results are bounded), so holding one back costs little.
type rewriter struct {
	http.ResponseWriter
	msg      message
	asEvents bool
	status   int
	body     bytes.Buffer
}

func (w *rewriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *rewriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// Flush is a no-op: the answer is written whole by finish.
func (w *rewriter) Flush() {}

// finish writes the answer, reworded where needed.
func (w *rewriter) finish() {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	ct := w.Header().Get("Content-Type")
	body := w.body.Bytes()
	switch {
	case status >= 400 && strings.HasPrefix(ct, "text/plain"):
		text := strings.TrimSpace(string(body))
		code := codeInvalidRequest
		if status >= 500 {
			code = codeInternalError
		}
		switch {
		case strings.HasPrefix(text, "JSON RPC not handled") && w.msg.id != nil:
			_ = writeRPC(w.ResponseWriter, http.StatusOK, w.asEvents, w.msg.id, codeMethodNotFound,
				fmt.Sprintf("Method not found: this server does not answer %q", w.msg.method))
		case strings.HasPrefix(text, "JSON RPC not handled"):
			_ = writeRPC(w.ResponseWriter, http.StatusBadRequest, false, nil, codeMethodNotFound,
				fmt.Sprintf("Method not found: this server does not take the notification %q", w.msg.method))
		case strings.Contains(text, "invalid request") && w.msg.id != nil:
			_ = writeRPC(w.ResponseWriter, http.StatusOK, w.asEvents, w.msg.id, codeInvalidRequest,
				"Invalid Request: "+sdkWording(strings.TrimPrefix(text, "invalid request: "), w.msg.method))
		default:
			_ = writeRPC(w.ResponseWriter, status, false, nil, code, sdkWording(text, w.msg.method))
		}
		return
	case strings.HasPrefix(ct, "application/json"):
		body = w.restoreID(rewordErrors(body, w.msg.method))
	case strings.HasPrefix(ct, "text/event-stream"):
		var out bytes.Buffer
		for line := range bytes.SplitAfterSeq(body, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				out.WriteString("data: ")
				out.Write(w.restoreID(rewordErrors(bytes.TrimRight(data, "\n"), w.msg.method)))
				out.WriteString("\n")
				continue
			}
			out.Write(line)
		}
		body = out.Bytes()
	}
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(body)
}

// swapID replaces the value of the top-level "id" member of the JSON object body with id,
// leaving every other byte as it was. Of repeated "id" members it takes the last, the one a
// decoder keeps.
func swapID(body, id []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return body
	}
	start, end := -1, -1
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return body
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return body
		}
		if key == "id" {
			end = int(d.InputOffset())
			start = end - len(v)
		}
	}
	if start < 0 {
		return body
	}
	return slices.Concat(body[:start], id, body[end:])
}

// restoreID puts the request's numeric id back into a JSON-RPC message that answers it with
// edgeID (message.numericID).
func (w *rewriter) restoreID(body []byte) []byte {
	if !w.msg.numericID {
		return body
	}
	var m struct{ ID json.RawMessage }
	if json.Unmarshal(bytes.TrimSpace(body), &m) != nil || string(m.ID) != edgeID {
		return body
	}
	return swapID(body, w.msg.id)
}

// goInternals matches the SDK's decoder errors that name Go types and packages.
var goInternals = regexp.MustCompile(`Go (value|struct field)|\*?mcp\.[A-Za-z]|jsonrpc2?\.[A-Za-z]|json: cannot unmarshal|of type [\w.*\[\]]+`)

// sdkWording keeps an SDK message an agent can read and replaces one that shows Go internals.
func sdkWording(text, method string) string {
	if goInternals.MatchString(text) {
		return fmt.Sprintf("the message for %q does not have the shape MCP defines for it", method)
	}
	return text
}

// rewordErrors rewords the error member of a JSON-RPC message, if it has one that needs it.
func rewordErrors(body []byte, method string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(body), &m) != nil || m["error"] == nil {
		return body
	}
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(m["error"], &e) != nil {
		return body
	}
	internal := goInternals.MatchString(e.Message)
	if !internal && e.Code != 0 {
		return body
	}
	if internal {
		e.Message = "Invalid params: " + sdkWording(e.Message, method)
		e.Code = codeInvalidParams
	} else {
		e.Code = codeInternalError
	}
	e.Data = nil
	m["error"], _ = json.Marshal(e)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *rewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
