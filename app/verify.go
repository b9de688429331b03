package app

import (
	"context"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Verification (docs/rules.md §2.4, §4.9, §5.2): the queue of tasks waiting for it, and the
// marks a reviewer or the assignee gives each acceptance criterion.

// CriterionMark is one criterion's mark: its uuid, status passed or failed, and optional
// evidence (the note shown with the mark).
type CriterionMark = workflows.CriterionMark

// checkMarks refuses marks that are not a criterion's uuid and a status passed or failed, in the
// words the tools' input check uses for criteria[i] (mcp's schema), so a front end that checks
// no schema (the console's forms) gets the same field-named refusal, and nothing is written. The
// uuids are brought to lower case, as the tools' are.
func checkMarks(marks []CriterionMark) error {
	for i := range marks {
		m := &marks[i]
		if !vocab.IsUUID(strings.TrimSpace(m.UUID)) {
			return Refuse(vocab.RefusedInvalid, "Input validation error: criteria[%d].uuid must be a uuid, got %q", i, m.UUID)
		}
		m.UUID = strings.ToLower(strings.TrimSpace(m.UUID))
		if m.Status != "passed" && m.Status != "failed" {
			return Refuse(vocab.RefusedInvalid, "Input validation error: criteria[%d].status must be one of passed, failed, got %q",
				i, m.Status)
		}
	}
	return nil
}

// VerifyQueue is a page of the tasks in to_verify (docs/rules.md §2.4) across the projects the
// caller can see, oldest submission first, and how many wait in all. A project the caller
// cannot see adds nothing, not even to the count (§6.3).
func (a *App) VerifyQueue(ctx context.Context, r Request, p Page) ([]store.VerifyItem, int, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	return a.Store.VerifyQueue(ctx, r.Who.Caller, p.Limit, max(p.Offset, 0))
}
