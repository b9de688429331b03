package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// VerifyItem is one task of the verification queue: a task in to_verify with its project's name,
// its assignee, when it was submitted and how far its acceptance criteria are (admin marks and
// the assignee's self-check, docs/rules.md §1.11).
type VerifyItem struct {
	UUID         string    `bun:"uuid"`
	Title        string    `bun:"title"`
	Priority     string    `bun:"priority"`
	ProjectUUID  string    `bun:"project_uuid"`
	ProjectName  string    `bun:"project_name"`
	AssigneeType *string   `bun:"assignee_type"`
	AssigneeUUID *string   `bun:"assignee_uuid"`
	SubmittedAt  time.Time `bun:"submitted_at"`
	// Criteria counts every criterion; Passed and Failed count the admin marks, SelfPassed the
	// assignee's self-check marks passed.
	Criteria   int `bun:"criteria"`
	Passed     int `bun:"passed"`
	Failed     int `bun:"failed"`
	SelfPassed int `bun:"self_passed"`
}

// submittedAt is when a to_verify task got there: its latest submitted or status_changed
// activity (chorus_submit_for_verify, chorus_update_task's status), else, for a task moved by a
// work report's status, its last update.
const submittedAt = "COALESCE((SELECT MAX(sa.created_at) FROM activities AS sa WHERE sa.target_type = 'task' " +
	"AND sa.target_uuid = task.uuid AND sa.action IN ('submitted', 'status_changed')), task.updated_at)"

// criteriaCount counts a task's criteria that match cond ("" for all).
func criteriaCount(cond, as string) string {
	q := "(SELECT count(*) FROM acceptance_criteria AS vc WHERE vc.task_uuid = task.uuid"
	if cond != "" {
		q += " AND " + cond
	}
	return q + ") AS " + as
}

// verifyQueueTasks selects the to_verify tasks of the projects c can see (docs/rules.md §6.3:
// a hidden project's tasks are never listed).
func (s *Store) verifyQueueTasks(c Caller) *bun.SelectQuery {
	return s.DB.NewSelect().TableExpr("tasks AS task").
		Where("task.company_uuid = ?", c.CompanyUUID).
		Where("task.status = 'to_verify'").
		Where("task.project_uuid IN (?)", s.visibleProjectIDs(c))
}

// VerifyQueue returns a page of the tasks waiting for verification in the projects c can see,
// oldest submission first (uuid breaking ties), and how many wait in all.
func (s *Store) VerifyQueue(ctx context.Context, c Caller, limit, offset int) ([]VerifyItem, int, error) {
	rows := []VerifyItem{}
	err := s.verifyQueueTasks(c).
		ColumnExpr("task.uuid, task.title, task.priority, task.project_uuid, task.assignee_type, task.assignee_uuid").
		ColumnExpr("p.name AS project_name").
		ColumnExpr(submittedAt+" AS submitted_at").
		ColumnExpr(criteriaCount("", "criteria")).
		ColumnExpr(criteriaCount("vc.status = 'passed'", "passed")).
		ColumnExpr(criteriaCount("vc.status = 'failed'", "failed")).
		ColumnExpr(criteriaCount("vc.dev_status = 'passed'", "self_passed")).
		Join("JOIN projects AS p ON p.uuid = task.project_uuid").
		OrderExpr("submitted_at ASC").OrderExpr("task.uuid ASC").
		Limit(int64(limit)).Offset(int64(offset)).Scan(ctx, &rows)
	if err != nil {
		return nil, 0, err
	}
	n, err := s.verifyQueueTasks(c).Count(ctx)
	return rows, int(n), err
}
