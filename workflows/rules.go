package workflows

import (
	"strings"

	"github.com/chorus-dev/chorus/store"
)

// The rules on a command's input that more than one command or front end applies, each stated
// once here. The workflows' validators call them, and a front end that wants to refuse before
// it reaches a workflow calls the same function, so the two cannot disagree on the rule or its
// words (rules_once_test.go holds that each refusal text below is written nowhere else).

// inputInvalid begins a refusal that has no command's own context ("Input validation error: ...",
// the words of docs/rules.md §3.5).
const inputInvalid = "Input validation error"

// criteriaRequired is the reason a task without acceptance criteria is refused.
const criteriaRequired = "Acceptance criteria are required: provide at least one acceptanceCriteriaItems entry with a non-blank description"

// CheckTitle is the blank-title rule (docs/rules.md §3.5): a title given as empty or white space
// only is refused as invalid input; a title not given (nil) passes. The refusal reads
// "<where>: <field> must not be blank", where "" means "Input validation error" and field is
// the argument's name ("title", "tasks[].title").
func CheckTitle(where, field string, title *string) error {
	if title == nil || strings.TrimSpace(*title) != "" {
		return nil
	}
	if where == "" {
		where = inputInvalid
	}
	return Refuse(KindInvalid, "%s: %s must not be blank", where, field)
}

// HasCriteria reports whether items make acceptance criteria (docs/rules.md §5.2, "has
// criteria"): one item survives NormalizeCriteria.
func HasCriteria(items []store.CriterionDraft) bool { return len(NormalizeCriteria(items)) > 0 }

// CheckCriteria is the criteria rule: a task, or a task draft, must have acceptance criteria
// (HasCriteria). It refuses as invalid input with "<where>: Acceptance criteria are required:
// ...", or without a prefix when where is "". Proposal validation's W3 warns on the same test.
func CheckCriteria(where string, items []store.CriterionDraft) error {
	if HasCriteria(items) {
		return nil
	}
	if where == "" {
		return Refuse(KindInvalid, "%s", criteriaRequired)
	}
	return Refuse(KindInvalid, "%s: %s", where, criteriaRequired)
}
