package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// What chorus_claim_next_task reads (docs/rules.md §4.14). The claim itself is each candidate
// task's workflow's to grant or refuse; the store only proposes candidates and remembers which
// one a call with a requestId is trying.

// EditableProjectUUIDs lists the projects where the caller may change tasks (editor or better).
func (s *Store) EditableProjectUUIDs(ctx context.Context, c Caller) ([]string, error) {
	var rows []ProjectView
	if err := s.projectRoles(c).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range rows {
		if p.Level() >= AccessEditor {
			out = append(out, p.UUID)
		}
	}
	return out, nil
}

// claimOrder is chorus_claim_next_task's order: priority (docs/rules.md §8.4), then the oldest
// task first, so a queue never starves the work that waited longest.
func claimOrder(q *bun.SelectQuery) *bun.SelectQuery {
	return q.OrderExpr(priorityRank + " DESC").OrderExpr("task.created_at ASC").OrderExpr("task.uuid ASC")
}

// ClaimCandidates returns up to limit tasks of the projects that nobody holds, are open and
// unblocked (docs/rules.md §5.3), optionally of some proposals, leaving out skip, in claimOrder.
func (s *Store) ClaimCandidates(ctx context.Context, projectUUIDs, proposalUUIDs, skip []string, limit int) ([]Task, error) {
	if len(projectUUIDs) == 0 {
		return nil, nil
	}
	var rows []Task
	q := s.DB.NewSelect().Model(&rows).Where("task.project_uuid IN (?)", bun.List(projectUUIDs)).
		Where("task.status = 'open'").Where("task.assignee_uuid IS NULL").
		Where("NOT EXISTS (SELECT 1 FROM task_dependencies d JOIN tasks dt ON dt.uuid = d.depends_on_uuid " +
			"WHERE d.task_uuid = task.uuid AND dt.status NOT IN " + resolvedSQL + ")")
	if len(proposalUUIDs) > 0 {
		q = q.Where("task.proposal_uuid IN (?)", bun.List(proposalUUIDs))
	}
	if len(skip) > 0 {
		q = q.Where("task.uuid NOT IN (?)", bun.List(skip))
	}
	err := claimOrder(q).Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// claimNextAttempt is the task a chorus_claim_next_task call with a requestId is trying.
type claimNextAttempt struct {
	bun.BaseModel `bun:"table:claim_next_attempts"`

	AgentUUID  string    `bun:"agent_uuid,pk"`
	RequestID  string    `bun:"request_id,pk"`
	Generation int       `bun:"generation,pk"`
	TaskUUID   string    `bun:"task_uuid"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

// NoteClaimAttempt records, before the claim is sent, that the call (agent, requestID,
// generation) is trying taskUUID; it replaces the task it tried before.
func (s *Store) NoteClaimAttempt(ctx context.Context, agentUUID, requestID string, generation int, taskUUID string) error {
	row := claimNextAttempt{AgentUUID: agentUUID, RequestID: requestID, Generation: generation, TaskUUID: taskUUID, UpdatedAt: Now()}
	_, err := s.DB.NewInsert().Model(&row).On("CONFLICT (agent_uuid, request_id, generation) DO UPDATE").
		Set("task_uuid = EXCLUDED.task_uuid").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return err
}

// LastClaimAttempt returns the task the call (agent, requestID, generation) tried last, "" for
// none.
func (s *Store) LastClaimAttempt(ctx context.Context, agentUUID, requestID string, generation int) (string, error) {
	var row claimNextAttempt
	err := s.DB.NewSelect().Model(&row).Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).
		Where("generation = ?", generation).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return row.TaskUUID, err
}

// claimReservation is a candidate task a chorus_claim_next_task call is asking the workflow
// for; see ReserveClaim.
type claimReservation struct {
	bun.BaseModel `bun:"table:claim_reservations"`

	TaskUUID  string    `bun:"task_uuid,pk"`
	Holder    string    `bun:"holder"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// ReserveClaim reserves taskUUID for holder (one attempt of one call) for ttl, and reports
// whether it got it: false means another live attempt is asking that task's workflow now, so
// the caller should try another candidate (docs/rules.md §4.14). A reservation that lapsed (its
// call died) is taken over; one already held by holder is renewed. It saves claim attempts the
// workflow would refuse; it never decides a claim.
func (s *Store) ReserveClaim(ctx context.Context, taskUUID, holder string, ttl time.Duration) (bool, error) {
	now := Now()
	row := claimReservation{TaskUUID: taskUUID, Holder: holder, ExpiresAt: now.Add(ttl)}
	res, err := s.DB.NewInsert().Model(&row).
		On("CONFLICT (task_uuid) DO UPDATE").
		Set("holder = EXCLUDED.holder").Set("expires_at = EXCLUDED.expires_at").
		Where("claim_reservation.expires_at <= ? OR claim_reservation.holder = EXCLUDED.holder", now).
		Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseClaim ends holder's reservation of taskUUID, if it still holds it. It also removes
// every reservation that has lapsed: a lapsed row reserves nothing (ReserveClaim takes it over),
// and one left by a call that died on a task no call asks for again (claimed meanwhile, done,
// deleted) would otherwise stay forever.
func (s *Store) ReleaseClaim(ctx context.Context, taskUUID, holder string) error {
	_, err := s.DB.NewDelete().Model((*claimReservation)(nil)).
		WhereGroup(" AND ", func(q *bun.DeleteQuery) *bun.DeleteQuery {
			return q.Where("task_uuid = ? AND holder = ?", taskUUID, holder).WhereOr("expires_at <= ?", Now())
		}).Exec(ctx)
	return err
}
