package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/mcpclient"
)

// Playbooks fetches the server's role playbooks (the MCP prompts of mcp/prompts.go) by name
// with its arguments, as text.
type Playbooks interface {
	Playbook(ctx context.Context, name string, args map[string]string) (string, error)
}

// mcpPlaybooks fetches playbooks with prompts/get over MCP as the agent, each (name, arguments)
// once: later turns reuse the text.
type mcpPlaybooks struct {
	endpoint, key string
	mu            sync.Mutex
	cache         map[string]string
}

// NewMCPPlaybooks fetches playbooks from the MCP endpoint (.../api/mcp) with the agent's key.
func NewMCPPlaybooks(endpoint, key string) Playbooks {
	return &mcpPlaybooks{endpoint: endpoint, key: key, cache: map[string]string{}}
}

func (p *mcpPlaybooks) Playbook(ctx context.Context, name string, args map[string]string) (string, error) {
	id := name
	for _, k := range slices.Sorted(maps.Keys(args)) {
		id += " " + k + "=" + args[k]
	}
	p.mu.Lock()
	text, ok := p.cache[id]
	p.mu.Unlock()
	if ok {
		return text, nil
	}
	a, err := mcpclient.Connect(ctx, p.endpoint, p.key, &mcpsdk.Implementation{Name: "chorus-agent-run", Version: "1"})
	if err != nil {
		return "", err
	}
	defer a.Close()
	res, err := a.Session.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("prompts/get %s: %w", name, err)
	}
	var parts []string
	for _, m := range res.Messages {
		if t, ok := m.Content.(*mcpsdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text = strings.Join(parts, "\n\n")
	p.mu.Lock()
	p.cache[id] = text
	p.mu.Unlock()
	return text, nil
}

// why tells the agent what an event asks of it.
var why = map[string]string{
	"task_assigned":             "a task was assigned to you: take it to submission",
	"task_reopened":             "a task you submitted was reopened: read the comments and the criteria marks, fix it and submit it again",
	"task_claim_expired":        "your claim on a task lapsed: claim it again if you still work on it",
	"task_status_changed":       "a task's status changed",
	"task_submitted_for_verify": "a task waits for verification",
	"task_verified":             "a task was verified",
	"comment_added":             "a comment was added",
	"mentioned":                 "you were @mentioned: read the comment and answer or act on it",
	"idea_claimed":              "an idea was claimed",
	"elaboration_requested":     "an idea's elaboration asks questions",
	"elaboration_answered":      "your elaboration questions were answered: read the answers and go on to the proposal",
	"proposal_approved":         "a proposal was approved",
	"proposal_rejected":         "your proposal was rejected: read its reviewNote, revise it and submit it again",
	"report_created":            "a report was created",
	"agent_checkin":             "an agent checked in",
	"gate_requested":            "a person's approval was requested",
	"gate_applied":              "a person approved your gated command and it was carried out: go on from there",
	"gate_refused":              "a person refused your gated command: read the note and do what it asks",
	"gate_expired":              "your gated command expired without a decision",
}

// playbookFor is the playbook an event calls for, and its argument: a developer's for a task,
// a PM's for an idea and what belongs to it; none for anything else.
func playbookFor(e Event) (name string, args map[string]string) {
	switch e.EntityType {
	case "task":
		return "task-to-submission", map[string]string{"taskUuid": e.EntityUUID}
	case "idea", "elaboration", "proposal", "document":
		if e.IdeaUUID != "" {
			return "idea-to-proposal", map[string]string{"ideaUuid": e.IdeaUUID}
		}
		if e.EntityType == "idea" {
			return "idea-to-proposal", map[string]string{"ideaUuid": e.EntityUUID}
		}
		return "idea-to-proposal", nil
	}
	return "", nil
}

// buildPrompt writes a turn's prompt: the events it handles and why, how to reach Chorus, and
// the playbooks they call for (each once; a playbook that cannot be fetched is named instead).
func buildPrompt(ctx context.Context, a Agent, group string, events []Event, pb Playbooks) (string, []error) {
	var b strings.Builder
	var errs []error
	gap := slices.IndexFunc(events, func(e Event) bool { return e.Kind == GapKind })
	fmt.Fprintf(&b, "You are the Chorus agent %q, started by `chorus agent run` because something needs you.\n\n", a.Name)
	if gap >= 0 {
		if events[gap].Reason == CatchUpFirstStart {
			b.WriteString("Catch up: the runner has just started for you for the first time, so work given to you before " +
				"it started (tasks assigned to you, questions waiting for you) is in no event it will read. ")
		} else {
			b.WriteString("Catch up: events for you may have been missed (the server no longer keeps the ones after where the " +
				"runner stopped). ")
		}
		b.WriteString("Re-read your state: call chorus_checkin, chorus_get_notifications and chorus_get_my_assignments, " +
			"and do the work that waits for you.\n\n")
	}
	var real []Event
	for _, e := range events {
		if e.Kind != GapKind {
			real = append(real, e)
		}
	}
	if len(real) > 0 {
		b.WriteString("Events (oldest first):\n")
		for _, e := range real {
			fmt.Fprintf(&b, "- event %s: %s on %s %s", e.ID, e.Kind, orDash(e.EntityType), orDash(e.EntityUUID))
			if e.IdeaUUID != "" && e.IdeaUUID != e.EntityUUID {
				fmt.Fprintf(&b, " (idea %s)", e.IdeaUUID)
			}
			if e.ProjectUUID != "" {
				fmt.Fprintf(&b, " in project %s", e.ProjectUUID)
			}
			if w := why[e.Kind]; w != "" {
				fmt.Fprintf(&b, ": %s", w)
			}
			b.WriteString(".\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Use the Chorus MCP tools. CHORUS_URL (the MCP endpoint) and CHORUS_API_KEY (your key) are in your " +
		"environment; from a shell, `chorus mcp call TOOL key=value ...` calls a tool with them. Do what these events ask, " +
		"then end your turn: do not wait or poll for more work, the runner starts you again when something new needs you.\n")
	seen := map[string]bool{}
	for _, e := range real {
		name, args := playbookFor(e)
		if name == "" {
			continue
		}
		id := name + fmt.Sprint(args)
		if seen[id] {
			continue
		}
		seen[id] = true
		text, err := pb.Playbook(ctx, name, args)
		if err != nil {
			errs = append(errs, fmt.Errorf("playbook %s: %w", name, err))
			fmt.Fprintf(&b, "\nFollow the playbook %q (MCP prompts/get %s %s).\n", name, name, argText(args))
			continue
		}
		fmt.Fprintf(&b, "\nPlaybook %s %s:\n%s\n", name, argText(args), strings.TrimSpace(text))
	}
	return b.String(), errs
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func argText(args map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		parts = append(parts, k+"="+args[k])
	}
	return strings.Join(parts, " ")
}

// groupOf is the key turns are serialized by: the event's idea, else its entity; every gap
// shares one catch-up group.
func groupOf(e Event) string {
	switch {
	case e.Kind == GapKind:
		return "catch-up"
	case e.IdeaUUID != "":
		return e.IdeaUUID
	}
	return e.EntityUUID
}
