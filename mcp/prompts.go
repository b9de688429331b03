package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-dev/chorus/vocab"
)

// instructions is what every server tells the model when a client connects (at most 1.5 KB,
// TestSurfaceBudgets): the lifecycle, where to start, and the rules every tool shares, told
// once here rather than in each tool.
const instructions = `Chorus runs software delivery for teams of agents. A PM claims an idea, clarifies it in elaboration rounds (questions a person answers) and writes a proposal: document drafts (a PRD at least) and task drafts with acceptance criteria. An admin approves it, which creates the tasks. A developer claims a task, moves it to in_progress, self-checks its criteria and submits it; an admin marks the criteria and verifies it to done.

Start with chorus_checkin, then chorus_get_my_assignments. This server's prompts are step-by-step playbooks per role.

Tools come in toolsets (core, ideas, proposals, develop, sessions, review, collab, projects); a connection lists those it selects (header X-Chorus-Toolsets or path /api/mcp/x/<toolsets>; core always). A tool outside them says which toolset holds it.

Every tool that changes data takes an optional requestId (1-128 characters): send a new one with each change, and reuse it only to retry that change; the retry returns the first result and changes nothing.

Lists are paged: page from 1, pageSize 1-100 (default 20). A refusal says what failed, why, and what to do next.`

// playbook is one MCP prompt: a step-by-step guide for a role, written from docs/rules.md, that
// any client can fetch (prompts/get) and hand to its model.
type playbook struct {
	name, title, about string
	// role is who the playbook is for ("pm", "developer", "admin"), as chorus init --role names it.
	role string
	// toolsets are the toolsets whose tools the steps name, besides core (TestPlaybookToolsets).
	toolsets []toolset
	// arg is the prompt's one optional argument (an entity to start from), and how it is used.
	arg, argAbout string
	steps         func(arg string) string
}

var playbooks = []playbook{
	{
		name: "idea-to-proposal", title: "Run an idea to a proposal (PM)", role: "pm", toolsets: []toolset{tsIdeas, tsProposals},
		about: "For a PM agent: claim an idea, clarify it, and submit a proposal of documents and tasks for review. " +
			"Needs the ideas and proposals toolsets.",
		arg: "ideaUuid", argAbout: "the idea to work on (default: pick one open to claim)",
		steps: func(idea string) string {
			start := "1. Call chorus_checkin. Find an idea open to claim with chorus_get_available_ideas (projectUuid from " +
				"chorus_list_projects), read it with chorus_get_idea, and claim it with chorus_claim_idea: it becomes yours and elaborating."
			if idea != "" {
				start = fmt.Sprintf("1. Call chorus_checkin, read idea %s with chorus_get_idea, and claim it with "+
					"chorus_claim_idea unless you hold it already: it becomes yours and elaborating.", idea)
			}
			return start + `
2. Clarify what is unclear: chorus_pm_start_elaboration with 1 to 15 questions of 2 to 5 options each. A person answers (chorus_answer_elaboration); read the answers with chorus_get_elaboration. When no round is pending, resolve it with chorus_pm_validate_elaboration (needs idea:admin; otherwise ask an admin). If the idea is already clear, chorus_pm_skip_elaboration with a reason instead.
3. Create the proposal: chorus_pm_create_proposal with inputType idea and the idea's uuid in inputUuids. If its note names other proposals using the idea, read them first (chorus_get_proposals) so the work is not planned twice.
4. Add a PRD with chorus_pm_add_document_draft (type prd, 100 characters or more of markdown) and other documents as needed (tech_design, adr, spec, guide). Add task drafts with chorus_pm_add_task_draft: a title, a description, at least one acceptance criterion a reviewer can check, and dependsOnDraftUuids for the order of work.
5. Run chorus_pm_validate_proposal and fix every error-level issue (chorus_pm_update_document_draft, chorus_pm_update_task_draft, the remove tools); warnings are advice.
6. Submit with chorus_pm_submit_proposal: it is pending until an admin decides. A rejection returns it to draft with a reviewNote (chorus_get_proposal shows it): revise and submit again. Approval creates the tasks and documents.
Send a requestId with every change and reuse it when you retry one.`
		},
	},
	{
		name: "task-to-submission", title: "Take a task from claim to submission (developer)", role: "developer",
		toolsets: []toolset{tsDevelop},
		about: "For a developer agent: claim a task, do the work, self-check the acceptance criteria and submit it for " +
			"verification. Needs the develop toolset (core is always on).",
		arg: "taskUuid", argAbout: "the task to work on (default: the most important task you can start now)",
		steps: func(task string) string {
			start := "1. Call chorus_checkin, then chorus_get_my_assignments: finish a task you already hold before taking " +
				"another. To take one, chorus_claim_next_task claims the most important task you can start now (give " +
				"projectUuid to stay in one project); or list them with chorus_get_unblocked_tasks and claim one with chorus_claim_task."
			if task != "" {
				start = fmt.Sprintf("1. Call chorus_checkin, then claim task %s with chorus_claim_task (claiming a task "+
					"you hold changes nothing; one held by another agent is refused).", task)
			}
			return start + `
2. Read the task with chorus_get_task: its description, acceptanceCriteriaItems, dependsOn and references. The _hints of a claim say what blocks it and who waits for it; claimExpiresAt, when set, is when your claim lapses unless a task command or a session heartbeat renews it.
3. Start: chorus_report_work with a short plan and status in_progress. It is refused while a dependency is not done or closed: work on something else, or release the task (chorus_release_task).
4. Do the work. Record what you did with chorus_report_work as you go: each report is a comment on the task.
5. Check every criterion yourself: chorus_report_criteria_self_check with devStatus passed or failed and devEvidence (tests run, files changed) for each.
6. Submit with chorus_submit_for_verify: the task waits in to_verify for an admin. If it is reopened it comes back in_progress: read the comments and the criteria marks, fix, self-check and submit again.
Send a requestId with every change and reuse it when you retry one.`
		},
	},
	{
		name: "review-and-verify", title: "Review proposals and verify tasks (admin)", role: "admin",
		toolsets: []toolset{tsProposals, tsReview, tsCollab},
		about: "For an admin agent: decide pending proposals, then verify submitted tasks against their acceptance " +
			"criteria. Needs the proposals and review toolsets, and collab to comment and report.",
		arg: "projectUuid", argAbout: "the project to review (default: every project you can see)",
		steps: func(project string) string {
			where := "each project you can see (chorus_list_projects)"
			if project != "" {
				where = "project " + project
			}
			return fmt.Sprintf(`1. Call chorus_checkin. In %s, list the proposals waiting for a decision with chorus_get_proposals (status pending).
2. Read each with chorus_get_proposal (section full shows every draft) and run chorus_pm_validate_proposal. Then decide: chorus_admin_approve_proposal creates its tasks and documents; chorus_pm_reject_proposal returns it to draft with a reviewNote saying what to change; chorus_admin_close_proposal ends it for good (also with a reviewNote).
3. List the tasks waiting for verification with chorus_list_tasks (status to_verify). Read each with chorus_get_task: every criterion shows the developer's self-check and evidence.
4. Check the work, then mark each criterion with chorus_mark_acceptance_criteria (passed or failed, with evidence).
5. With every required criterion passed, chorus_admin_verify_task moves the task to done, which unblocks the tasks that depend on it. Otherwise chorus_admin_reopen_task sends it back to in_progress: say what to fix with chorus_add_comment (collab toolset).
6. When every task of an approved proposal is done, its completion report (chorus_create_report, collab toolset) closes the idea's work.
Send a requestId with every change and reuse it when you retry one.`, where)
		},
	},
}

// Playbook is one of the playbooks the server serves as MCP prompts, for other front ends (chorus
// init writes a role's playbooks into an agent instruction file): the same text prompts/get
// answers when the prompt's optional argument is left out.
type Playbook struct {
	// Name is the prompt's name (idea-to-proposal, task-to-submission, review-and-verify).
	Name string
	// Title and About are the prompt's title and description.
	Title, About string
	// Role is who it is for: "pm", "developer" or "admin".
	Role string
	// Toolsets are the toolsets its steps use besides core, in table order.
	Toolsets []string
	// Text is the steps, as prompts/get answers them without the argument.
	Text string
}

// Playbooks lists the playbooks in the order prompts/list serves them.
func Playbooks() []Playbook {
	out := make([]Playbook, 0, len(playbooks))
	for _, pb := range playbooks {
		var sel selection
		for _, t := range pb.toolsets {
			sel = sel.with(t)
		}
		out = append(out, Playbook{Name: pb.name, Title: pb.title, About: pb.about, Role: pb.role,
			Toolsets: sel.names(), Text: pb.steps("")})
	}
	return out
}

// addPrompts serves the playbooks as MCP prompts (prompts/list, prompts/get).
func addPrompts(s *mcpsdk.Server) {
	for _, pb := range playbooks {
		pb := pb
		s.AddPrompt(&mcpsdk.Prompt{Name: pb.name, Title: pb.title, Description: pb.about,
			Arguments: []*mcpsdk.PromptArgument{{Name: pb.arg, Description: pb.argAbout}}},
			func(_ context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
				var arg string
				if req.Params != nil {
					arg = strings.TrimSpace(req.Params.Arguments[pb.arg])
				}
				if arg != "" && !vocab.IsUUID(arg) {
					return nil, &jsonrpc.Error{Code: codeInvalidParams,
						Message: fmt.Sprintf("Invalid params: %s must be a uuid, got %q", pb.arg, clipped(arg))}
				}
				return &mcpsdk.GetPromptResult{Description: pb.about, Messages: []*mcpsdk.PromptMessage{
					{Role: "user", Content: &mcpsdk.TextContent{Text: pb.title + "\n\n" + pb.steps(arg)}}}}, nil
			})
	}
}
