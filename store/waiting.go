package store

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Waiting is what waits for a person: their unread @-mentions (docs/rules.md §7.3), and, across
// the projects where they can act (§6.3: approving a proposal and verifying a task are changes,
// so they need editor or better), proposals submitted for review and tasks submitted for
// verification.
type Waiting struct {
	// Mentions counts the caller's unread "mentioned" notifications (those its inbox shows).
	Mentions int
	// Proposals counts the pending proposals (status "pending") of those projects.
	Proposals int
	// Tasks counts the tasks to verify (status "to_verify") of those projects.
	Tasks int
	// Projects counts the projects where the caller is editor or better.
	Projects int
}

// WaitingFor counts what waits for the caller in the company's projects where its level is
// editor or better (a project hidden from it, or where it is a viewer, counts nothing), and its
// unread mentions. Four queries: the mentions, the caller's roles, then one count per kind.
func (s *Store) WaitingFor(ctx context.Context, c Caller) (Waiting, error) {
	mentions, err := s.callerInbox(s.DB, (*Notification)(nil), c).Where("read_at IS NULL").Where("action = 'mentioned'").Count(ctx)
	if err != nil {
		return Waiting{}, err
	}
	var rows []ProjectView
	if err := s.projectRoles(c).Scan(ctx, &rows); err != nil {
		return Waiting{}, err
	}
	var ids []string
	for i := range rows {
		if rows[i].Level() >= AccessEditor {
			ids = append(ids, rows[i].UUID)
		}
	}
	w := Waiting{Mentions: int(mentions), Projects: len(ids)}
	if len(ids) == 0 {
		return w, nil
	}
	n, err := s.DB.NewSelect().Table("proposals").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status = ?", string(vocab.ProposalPending)).Count(ctx)
	if err != nil {
		return Waiting{}, err
	}
	w.Proposals = int(n)
	n, err = s.DB.NewSelect().Table("tasks").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status = ?", string(vocab.TaskToVerify)).Count(ctx)
	if err != nil {
		return Waiting{}, err
	}
	w.Tasks = int(n)
	return w, nil
}
