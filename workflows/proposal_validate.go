package workflows

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/store"
)

// Issue is one finding of proposal validation (docs/rules.md §5.4).
type Issue struct {
	ID      string  `json:"id"`
	Level   string  `json:"level"` // error | warning | info
	Message string  `json:"message"`
	Field   *string `json:"field,omitempty"`
}

// Validation is the result of chorus_pm_validate_proposal.
type Validation struct {
	Valid  bool    `json:"valid"`
	Issues []Issue `json:"issues"`
}

// minDocumentContent is E2's threshold, in characters.
const minDocumentContent = 100

// ValidateProposal runs every check of docs/rules.md §5.4 in the order listed there. inputs are the
// proposal's input ideas as they are now (only idea-input proposals look at them). It is pure:
// chorus_pm_validate_proposal and chorus_pm_submit_proposal both call it.
func ValidateProposal(p store.Proposal, inputs []store.IdeaFacts) Validation {
	var issues []Issue
	add := func(id, level, msg string, field *string) {
		issues = append(issues, Issue{ID: id, Level: level, Message: msg, Field: field})
	}
	docs, tasks := p.DocumentDrafts, p.TaskDrafts
	if !slices.ContainsFunc(docs, func(d store.DocumentDraft) bool { return d.Type == "prd" }) {
		add("E1", "error", "Proposal must contain at least one PRD document draft", nil)
	}
	for _, d := range docs {
		if utf8.RuneCountInString(d.Content) < minDocumentContent {
			add("E2", "error", fmt.Sprintf("Document draft %q must have content with at least %d characters", d.Title, minDocumentContent), ptr(d.Title))
		}
	}
	if len(tasks) == 0 {
		add("E3", "error", "Proposal must contain at least one task draft", nil)
	}
	if len(p.InputUUIDs) == 0 {
		add("E4", "error", "Proposal must have at least one input (idea or other source)", nil)
	}
	if p.InputType == "idea" {
		for _, in := range inputs {
			if in.Found && deref(in.ElaborationStatus) != "resolved" {
				status := "null"
				if in.ElaborationStatus != nil {
					status = *in.ElaborationStatus
				}
				add("E5", "error", fmt.Sprintf("Input idea %q has unresolved elaboration (status: %s)", in.Title, status), ptr(in.Title))
			}
		}
	}
	known := map[string]int{}
	for i, t := range tasks {
		known[t.UUID] = i
	}
	for _, t := range tasks {
		for _, dep := range t.DependsOnDraftUUIDs {
			if _, ok := known[dep]; !ok {
				add("E-DEP-UNKNOWN", "error", fmt.Sprintf("Task draft %q depends on unknown draft %q", t.Title, dep), ptr(t.Title))
			}
		}
	}
	for _, t := range tasks {
		if slices.Contains(t.DependsOnDraftUUIDs, t.UUID) {
			add("E-DEP-SELF", "error", fmt.Sprintf("Task draft %q depends on itself", t.Title), ptr(t.Title))
		}
	}
	for _, cycle := range draftCycles(tasks, known) {
		names := make([]string, len(cycle))
		for i, idx := range cycle {
			names[i] = fmt.Sprintf("%q", tasks[idx].Title)
		}
		names = append(names, names[0])
		add("E-DEP-CYCLE", "error", "Task drafts form a dependency cycle: "+strings.Join(names, " -> "), ptr(tasks[cycle[0]].Title))
	}
	if !slices.ContainsFunc(docs, func(d store.DocumentDraft) bool { return d.Type == "tech_design" }) {
		add("W1", "warning", "Proposal should contain at least one tech design document draft", nil)
	}
	for _, t := range tasks {
		if t.Description == nil || strings.TrimSpace(*t.Description) == "" {
			add("W2", "warning", fmt.Sprintf("Task draft %q is missing a description", t.Title), ptr(t.Title))
		}
	}
	for _, t := range tasks {
		if !HasCriteria(t.AcceptanceCriteriaItems) {
			add("W3", "warning", fmt.Sprintf("Task draft %q is missing acceptance criteria", t.Title), nil)
		}
	}
	if len(tasks) >= 2 && !slices.ContainsFunc(tasks, func(t store.TaskDraft) bool { return len(t.DependsOnDraftUUIDs) > 0 }) {
		add("W4", "warning", "When there are multiple tasks, at least one should declare dependencies", nil)
	}
	if p.Description == nil || strings.TrimSpace(*p.Description) == "" {
		add("W5", "warning", "Proposal description should not be empty", nil)
	}
	anyKind := slices.ContainsFunc(tasks, func(t store.TaskDraft) bool { return t.Kind != nil })
	if anyKind && !slices.ContainsFunc(tasks, func(t store.TaskDraft) bool { return deref(t.Kind) == "implementation" }) {
		add("W-IMPL", "warning", "Task drafts declare kinds but none is an implementation task; explain existing-implementation "+
			"or docs-only scope instead of inventing work", nil)
	}
	for _, t := range tasks {
		if t.Priority == nil {
			add("I1", "info", fmt.Sprintf("Task draft %q does not have a priority set", t.Title), nil)
		}
	}
	for _, t := range tasks {
		if t.StoryPoints == nil {
			add("I2", "info", fmt.Sprintf("Task draft %q does not have story points set", t.Title), nil)
		}
	}
	if len(tasks) > 0 && !anyKind {
		add("I-KIND", "info", "Task drafts have no kind; implementation coverage cannot be checked", nil)
	}
	if issues == nil {
		issues = []Issue{}
	}
	valid := !slices.ContainsFunc(issues, func(i Issue) bool { return i.Level == "error" })
	return Validation{Valid: valid, Issues: issues}
}

// draftCycles finds the cycles of the graph of known, non-self draft dependencies, one per
// back edge of a depth-first search in draft order; each cycle lists draft indexes.
func draftCycles(tasks []store.TaskDraft, known map[string]int) [][]int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(tasks))
	var stack []int
	var cycles [][]int
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for _, dep := range tasks[i].DependsOnDraftUUIDs {
			j, ok := known[dep]
			if !ok || j == i {
				continue
			}
			switch color[j] {
			case white:
				visit(j)
			case grey:
				start := slices.Index(stack, j)
				cycles = append(cycles, slices.Clone(stack[start:]))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range tasks {
		if color[i] == white {
			visit(i)
		}
	}
	return cycles
}

// NormalizeCriteria applies docs/rules.md §5.2: descriptions trimmed, blank ones dropped.
func NormalizeCriteria(items []store.CriterionDraft) []store.CriterionDraft {
	var out []store.CriterionDraft
	for _, it := range items {
		d := strings.TrimSpace(it.Description)
		if d == "" {
			continue
		}
		out = append(out, store.CriterionDraft{Description: d, Required: it.Required})
	}
	return out
}

// FailedValidationMessage is submit's refusal text: every issue, one per line.
func FailedValidationMessage(v Validation) string {
	msg := "Proposal validation failed:"
	for _, i := range v.Issues {
		msg += "\n[" + i.Level + "] " + i.Message
	}
	return msg
}
