package mcp

import (
	"context"
	"encoding/json"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Every tool call logs one "tool call" line (docs/operations.md "Logs") that answers "what did this agent
// try, on what, and how did it end" afterwards:
//
//	ref        the request's id, sent to the client as the X-Request-Id header, as the _meta
//	           "chorus/ref" of an error result, and inside an internal error's text
//	tool, agent
//	entity     the uuid the call was about (the lifecycle entity whose workflow it commanded,
//	           else the first entity argument it named)
//	workflowId the entity's workflow, when it is an idea, proposal or task
//	updateId   the workflow update the call sent, when it sent one
//	requestId  the caller's idempotency key, when it sent one
//	outcome    ok, refused or error; for a failure its kind, and for a refusal the text the agent read
//	ms         from the start of the request (authentication included) to the answer

// refMetaKey is the _meta key of an error result that carries the request's ref.
const refMetaKey = "chorus/ref"

// entityArgs are the arguments that name the entity a call is about, most specific first; the
// lifecycle ones also name its workflow.
var entityArgs = []struct {
	arg    string
	entity vocab.Entity
}{
	{"taskUuid", vocab.EntityTask}, {"proposalUuid", vocab.EntityProposal}, {"ideaUuid", vocab.EntityIdea},
	{"documentUuid", ""}, {"draftUuid", ""}, {"targetUuid", ""}, {"groupUuid", ""}, {"sessionUuid", ""},
	{"notificationUuid", ""}, {"agentUuid", ""}, {"projectUuid", ""},
}

// callLogAttrs are the attributes of a tool call's log line.
func callLogAttrs(ctx context.Context, tool, ref string, req *mcpsdk.CallToolRequest, trace *workflows.Trace,
	res *mcpsdk.CallToolResult, err error, took time.Duration) []any {
	who, _ := principalFrom(ctx)
	attrs := []any{"ref", ref, "tool", tool, "agent", who.Caller.AgentUUID}
	entity, workflowID := "", ""
	var args map[string]json.RawMessage
	if req != nil && req.Params != nil {
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	for _, a := range entityArgs {
		var v string
		if json.Unmarshal(args[a.arg], &v) == nil && v != "" {
			entity = v
			if a.entity != "" {
				workflowID = vocab.WorkflowID(a.entity, v)
			}
			break
		}
	}
	wid, updateID := trace.Get()
	if wid != "" {
		workflowID = wid
		if _, uuid, perr := vocab.ParseWorkflowID(wid); perr == nil {
			entity = uuid
		}
	}
	if entity != "" {
		attrs = append(attrs, "entity", entity)
	}
	if workflowID != "" {
		attrs = append(attrs, "workflowId", workflowID)
	}
	if updateID != "" {
		attrs = append(attrs, "updateId", updateID)
	}
	var rid string
	if json.Unmarshal(args[requestIDField], &rid) == nil && rid != "" {
		attrs = append(attrs, "requestId", rid)
	}
	outcome, kind := classify(err)
	attrs = append(attrs, "outcome", outcome)
	if kind != "" {
		attrs = append(attrs, "kind", kind)
	}
	if outcome == outcomeRefused {
		attrs = append(attrs, "refusal", resultText(res))
	}
	return append(attrs, "isError", res.IsError, "ms", took.Milliseconds())
}

// resultText is the text of a result's first content.
func resultText(res *mcpsdk.CallToolResult) string {
	if res != nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
