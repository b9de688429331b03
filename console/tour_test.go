package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/vocab"
)

// demo is a project as agents leave it mid-way: an idea done through a proposal, an idea
// waiting for a person's answers, a proposal waiting for review, a task waiting for
// verification, tasks in progress and open.
type demo struct {
	project, doneIdea, openIdea, proposal, toVerify, inProgress string
}

const prd = "## Goal\n\nLet people pick a **dark theme** that follows their system setting.\n\n" +
	"| Surface | Change |\n|---|---|\n| Settings | a toggle |\n| Tokens | both themes |\n\n" +
	"- [x] design tokens agreed\n- [ ] contrast checked\n"

// fillDemo builds the demo through MCP, as agents would.
func (s *stack) fillDemo() demo {
	s.t.Helper()
	pm := s.agent("Pat (PM)", s.admin, "pm_agent")
	admin := s.connect(s.adminKey)
	dev := s.agent("Ada (developer)", s.admin, "developer_agent")
	bob := s.agent("Bob (developer)", s.admin, "developer_agent")
	var d demo
	d.project = str(s.call(admin, "chorus_admin_create_project", map[string]any{"name": "Website",
		"description": "The public site and its settings"}), "uuid")

	d.doneIdea = str(s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": d.project, "title": "Dark mode",
		"content": "Let users pick a dark theme"}), "uuid")
	s.call(pm, "chorus_claim_idea", map[string]any{"ideaUuid": d.doneIdea})
	s.call(pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": d.doneIdea, "reason": "Clear enough"})
	pr := str(s.call(pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": d.project, "title": "Dark mode v1",
		"description": "Ship a dark theme", "inputType": "idea", "inputUuids": []string{d.doneIdea}}), "uuid")
	s.call(pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": pr, "type": "prd", "title": "Dark mode PRD",
		"content": prd})
	tokens := str(s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": "Theme tokens",
		"priority": "high", "acceptanceCriteriaItems": []map[string]any{{"description": "tokens defined for both themes"},
			{"description": "contrast ratio at least 4.5:1"}}}), "draftUuid")
	s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": "Settings toggle",
		"dependsOnDraftUuids": []string{tokens}, "acceptanceCriteriaItems": []map[string]any{{"description": "toggle persists"}}})
	s.call(pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": pr})
	approved := s.call(admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": pr})
	d.toVerify = str(approved, "materializedTasks.0.taskUuid")
	s.workTask(dev, d.toVerify, true)

	d.openIdea = str(s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": d.project, "title": "Single sign-on",
		"content": "Log in with the company account"}), "uuid")
	s.call(pm, "chorus_claim_idea", map[string]any{"ideaUuid": d.openIdea})
	s.call(pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": d.openIdea, "depth": "minimal",
		"questions": []map[string]any{{"id": "q1", "text": "Which identity provider?", "category": "functional",
			"options": []map[string]any{{"id": "okta", "label": "Okta"}, {"id": "google", "label": "Google"}}}}})

	d.proposal = str(s.call(pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": d.project, "title": "Search v2",
		"description": "Faster search", "inputType": "idea", "inputUuids": []string{d.doneIdea}}), "uuid")
	s.call(pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": d.proposal, "type": "prd", "title": "Search PRD",
		"content": prd})
	s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": d.proposal, "title": "Index titles",
		"acceptanceCriteriaItems": []map[string]any{{"description": "titles searchable"}}})
	s.call(pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": d.proposal})
	// Approving a proposal waits for a person here: the admin agent's approve is held at a gate.
	_, err := s.app.SetGatePolicyAsOperator(context.Background(), s.company, d.project,
		app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}, ExpireAfterSeconds: 86400})
	require.NoError(s.t, err)
	s.call(admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": d.proposal})

	var quick []string
	for _, title := range []string{"Fix the login redirect", "Update the README"} {
		quick = append(quick, str(s.call(admin, "chorus_create_tasks", map[string]any{"projectUuid": d.project,
			"tasks": []map[string]any{{"title": title, "acceptanceCriteriaItems": []map[string]any{{"description": "done as described"}}}}}),
			"tasks.0.uuid"))
	}
	d.inProgress = quick[0]
	s.workTask(bob, d.inProgress, false)
	return d
}

// workTask takes a task from claimed to submitted for verification (submit) as dev, self-checking
// every criterion passed and reporting the work.
func (s *stack) workTask(dev *mcpclient.Agent, task string, submit bool) {
	s.t.Helper()
	s.call(dev, "chorus_claim_task", map[string]any{"taskUuid": task})
	s.call(dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"})
	if !submit {
		return
	}
	got := s.call(dev, "chorus_get_task", map[string]any{"taskUuid": task})
	items, _ := got["acceptanceCriteriaItems"].([]any)
	var checks []map[string]any
	for _, it := range items {
		checks = append(checks, map[string]any{"uuid": it.(map[string]any)["uuid"], "devStatus": "passed",
			"devEvidence": "checked in the preview build"})
	}
	s.call(dev, "chorus_report_criteria_self_check", map[string]any{"taskUuid": task, "criteria": checks})
	s.call(dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "Added the tokens and a contrast check to CI."})
	s.call(dev, "chorus_submit_for_verify", map[string]any{"taskUuid": task, "summary": "Tokens in place; contrast verified."})
}

// str is the string at a dotted path of a tool result ("materializedTasks.0.taskUuid").
func str(v map[string]any, path string) string {
	got, err := mcpclient.Field(v, path)
	if err != nil {
		panic(fmt.Sprintf("%s: %v in %v", path, err, v))
	}
	s, ok := got.(string)
	if !ok {
		panic(fmt.Sprintf("%s is %T, not a string, in %v", path, got, v))
	}
	return s
}

// TestConsoleTour walks the console's main pages over the demo project in Chromium, as a person
// who followed the README would, and checks each shows what agents did. With CHORUS_SCREENSHOTS
// set to a directory (make screenshots), it saves each page there as a PNG for the README.
func TestConsoleTour(t *testing.T) {
	s := newStack(t, "sqlite")
	d := s.fillDemo()
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	out := os.Getenv("CHORUS_SCREENSHOTS")
	pages := []struct{ name, path, shows string }{
		{"projects", "/console/", "Website"},
		{"board", "/console/projects/" + d.project, "Settings toggle"},
		{"ideas", "/console/projects/" + d.project + "/ideas", "Single sign-on"},
		{"elaboration", "/console/ideas/" + d.openIdea, "Which identity provider?"},
		{"review", "/console/proposals/" + d.proposal, "Index titles"},
		{"verify", "/console/verify", "Theme tokens"},
		{"task", "/console/tasks/" + d.toVerify, "contrast ratio at least 4.5:1"},
		{"gates", "/console/gates", "Approving a proposal"},
		{"inbox", "/console/inbox", "Inbox"},
		{"agents", "/console/agents", "Ada (developer)"},
	}
	for _, p := range pages {
		b.open(p.path)
		b.waitText(p.shows)
		if out != "" {
			require.NoError(t, os.MkdirAll(out, 0o755))
			b.screenshot(filepath.Join(out, "console-"+p.name+".png"))
		}
	}
}
