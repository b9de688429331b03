package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/vocab"
)

// lockedBuffer is a log sink safe for the endpoint's concurrent handlers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the logged JSON records with the given message.
func (b *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// refRecorder keeps the X-Request-Id of every response it sees.
type refRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	refs []string
}

func (r *refRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.refs = append(r.refs, resp.Header.Get(RequestIDHeader))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *refRecorder) seen(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.refs {
		if x == ref {
			return true
		}
	}
	return false
}

// A refused lifecycle command leaves a "tool call" line naming the request, the agent, the
// entity, its workflow and the update, the outcome and the refusal's kind and text; the ref the
// agent got back (X-Request-Id, and the error result's _meta) finds that line (docs/operations.md "Logs").
func TestToolCallLogLine(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		logs := &lockedBuffer{}
		e.deps.Log = slog.New(slog.NewJSONHandler(logs, nil))
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		idea := createIdea(t, admin, project, "Idea", nil)
		ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)

		otherKey := e.agent("Other", perm.PMAgent)
		rec := &refRecorder{base: bearer{key: otherKey, base: http.DefaultTransport}}
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
		other, err := c.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: e.url,
			HTTPClient: &http.Client{Transport: rec}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })

		res := call(t, other, "chorus_claim_idea", map[string]any{"ideaUuid": idea, "requestId": "grab-1"})
		require.True(t, res.IsError, text(res))
		ref, _ := res.Meta[refMetaKey].(string)
		require.NotEmpty(t, ref, "an error result carries its ref in _meta")
		require.True(t, rec.seen(ref), "the ref is the response's X-Request-Id")

		var line map[string]any
		for _, l := range logs.lines(t, "tool call") {
			if l["ref"] == ref {
				require.Nil(t, line, "one line per ref")
				line = l
			}
		}
		require.NotNil(t, line, "the ref finds the call's log line")
		require.Equal(t, "chorus_claim_idea", line["tool"])
		require.NotEmpty(t, line["agent"])
		require.Equal(t, idea, line["entity"])
		require.Equal(t, vocab.IdeaID(idea), line["workflowId"])
		require.Contains(t, line["updateId"], "grab-1", "the update the call sent")
		require.Equal(t, "grab-1", line["requestId"])
		require.Equal(t, "refused", line["outcome"])
		require.NotEmpty(t, line["kind"])
		require.Equal(t, text(res), line["refusal"], "the refusal's text, as the agent read it")
		require.Contains(t, line, "ms")

		// The admin's own successful claim was logged too, with its ref and no refusal.
		var okLines int
		for _, l := range logs.lines(t, "tool call") {
			if l["tool"] == "chorus_claim_idea" && l["outcome"] == "ok" {
				okLines++
				require.NotEmpty(t, l["ref"])
				require.NotContains(t, l, "refusal")
				require.Equal(t, vocab.IdeaID(idea), l["workflowId"])
			}
		}
		require.Equal(t, 1, okLines)
	})
}

// An internal error's text names the request's ref, the same id as its log lines and its
// X-Request-Id, and the "tool failed" line carries it with the error.
func TestInternalErrorTextCarriesRef(t *testing.T) {
	logs := &lockedBuffer{}
	ctx := withRef(context.Background(), "abc123def456")
	msg := toolErrorText(ctx, slog.New(slog.NewJSONHandler(logs, nil)), "chorus_x", errors.New("boom"))
	require.Equal(t, "internal error (ref abc123def456); the operators can look it up in the server log", msg)
	lines := logs.lines(t, "tool failed")
	require.Len(t, lines, 1)
	require.Equal(t, "abc123def456", lines[0]["ref"])
	require.Equal(t, "boom", lines[0]["err"])
}
