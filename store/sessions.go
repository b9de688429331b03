package store

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Agent sessions and their task check-ins (docs/rules.md §1.17, §2.5) are plain records: short
// transactions, no workflow. Nothing about a session needs a timer: "stale" is derived from
// lastActiveAt when it is read.

// AgentSession is one agent's named unit of work.
type AgentSession struct {
	bun.BaseModel `bun:"table:agent_sessions,alias:agent_session"`

	UUID         string    `bun:"uuid,pk"`
	CompanyUUID  string    `bun:"company_uuid"`
	AgentUUID    string    `bun:"agent_uuid"`
	Name         string    `bun:"name"`
	Description  *string   `bun:"description"`
	Status       string    `bun:"status"`
	LastActiveAt time.Time `bun:"last_active_at"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
}

// StaleAfter is how long without activity makes a session stale (docs/rules.md §2.5).
const StaleAfter = time.Hour

// Stale reports whether the session has been inactive for StaleAfter or longer at now.
func (s *AgentSession) Stale(now time.Time) bool { return !s.LastActiveAt.After(now.Add(-StaleAfter)) }

// SessionCheckin says that a session works on a task; CheckoutAt is nil while it does.
type SessionCheckin struct {
	bun.BaseModel `bun:"table:session_task_checkins,alias:checkin"`

	SessionUUID string     `bun:"session_uuid,pk"`
	TaskUUID    string     `bun:"task_uuid,pk"`
	CheckinAt   time.Time  `bun:"checkin_at"`
	CheckoutAt  *time.Time `bun:"checkout_at"`
}

// Session refusals, in the words agents see (docs/rules.md §2.5).
var (
	// ErrSessionNotActive: a check-in needs an active session.
	ErrSessionNotActive = errors.New("Session not found or not active")
	// ErrSessionNotClosed: only a closed session can be reopened.
	ErrSessionNotClosed = errors.New("only closed sessions can be reopened")
)

// NewSession is what CreateSession needs.
type NewSession struct {
	// UUID is the session's uuid; one that already names a session of the agent (a create
	// retried under its requestId) returns that session.
	UUID        string
	Name        string
	Description *string
}

// CreateSession creates an active session of the caller.
func (s *Store) CreateSession(ctx context.Context, c Caller, n NewSession) (*AgentSession, error) {
	now := Now()
	row := AgentSession{UUID: n.UUID, CompanyUUID: c.CompanyUUID, AgentUUID: c.AgentUUID, Name: n.Name,
		Description: n.Description, Status: "active", LastActiveAt: now, CreatedAt: now, UpdatedAt: now}
	if row.UUID == "" {
		row.UUID = NewUUID()
	}
	if _, err := s.DB.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
		return nil, err
	}
	return s.Session(ctx, c, row.UUID)
}

// Session returns a session of the caller: "Session not found" for a uuid that names no session
// of the caller, whether it names none at all or another agent's (docs/rules.md §2.5: hidden is
// not found, so a key cannot probe for other agents' sessions).
func (s *Store) Session(ctx context.Context, c Caller, sessionUUID string) (*AgentSession, error) {
	if !vocab.IsUUID(sessionUUID) {
		return nil, NotFound("Session")
	}
	var row AgentSession
	err := s.DB.NewSelect().Model(&row).Where("uuid = ?", sessionUUID).Where("company_uuid = ?", c.CompanyUUID).
		Where("agent_uuid = ?", c.AgentUUID).Scan(ctx)
	if err != nil {
		return nil, mapErr(err, "Session")
	}
	return &row, nil
}

// ListSessions returns a page of the caller's sessions, newest first, optionally of one status,
// and how many there are.
func (s *Store) ListSessions(ctx context.Context, c Caller, status string, limit, offset int) ([]AgentSession, int, error) {
	var rows []AgentSession
	q := s.DB.NewSelect().Model(&rows).Where("agent_uuid = ?", c.AgentUUID).Where("company_uuid = ?", c.CompanyUUID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	total, err := q.Order("created_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(total), err
}

// ActiveSessions returns up to limit of the agent's active sessions, most recently active first.
func (s *Store) ActiveSessions(ctx context.Context, c Caller, limit int) ([]AgentSession, error) {
	var rows []AgentSession
	err := s.DB.NewSelect().Model(&rows).Where("agent_uuid = ?", c.AgentUUID).Where("company_uuid = ?", c.CompanyUUID).
		Where("status = 'active'").Order("last_active_at DESC", "uuid DESC").Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// OpenCheckins returns the check-ins of the sessions that have not been checked out, oldest
// first, keyed by session.
func (s *Store) OpenCheckins(ctx context.Context, sessionUUIDs ...string) (map[string][]SessionCheckin, error) {
	out := map[string][]SessionCheckin{}
	if len(sessionUUIDs) == 0 {
		return out, nil
	}
	var rows []SessionCheckin
	err := s.DB.NewSelect().Model(&rows).Where("session_uuid IN (?)", bun.List(sessionUUIDs)).
		Where("checkout_at IS NULL").Order("checkin_at ASC", "task_uuid ASC").Scan(ctx)
	for _, r := range rows {
		out[r.SessionUUID] = append(out[r.SessionUUID], r)
	}
	return out, err
}

// TouchSession is the implicit heartbeat (docs/rules.md §2.5): an active session's lastActiveAt
// becomes now; a closed one is left alone. It returns the time written.
func (s *Store) TouchSession(ctx context.Context, sessionUUID string) (time.Time, error) {
	now := Now()
	_, err := s.DB.NewUpdate().Model((*AgentSession)(nil)).Set("last_active_at = ?", now).Set("updated_at = ?", now).
		Where("uuid = ?", sessionUUID).Where("status = 'active'").Exec(ctx)
	return now, err
}

// CloseSession closes a session (closing a closed one again succeeds): lastActiveAt is refreshed
// and every open check-in is checked out, in one transaction. Tasks are not touched.
func (s *Store) CloseSession(ctx context.Context, sessionUUID string) error {
	now := Now()
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*AgentSession)(nil)).Set("status = 'closed'").Set("last_active_at = ?", now).
			Set("updated_at = ?", now).Where("uuid = ?", sessionUUID).Where("status = 'active'").Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*SessionCheckin)(nil)).Set("checkout_at = ?", now).
			Where("session_uuid = ?", sessionUUID).Where("checkout_at IS NULL").Exec(ctx)
		return err
	})
}

// ReopenSession makes a closed session active again with lastActiveAt now; a session that is not
// closed is ErrSessionNotClosed.
func (s *Store) ReopenSession(ctx context.Context, sessionUUID string) error {
	now := Now()
	res, err := s.DB.NewUpdate().Model((*AgentSession)(nil)).Set("status = 'active'").Set("last_active_at = ?", now).
		Set("updated_at = ?", now).Where("uuid = ?", sessionUUID).Where("status = 'closed'").Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrSessionNotClosed
	}
	return nil
}

// CheckinTask records that an active session works on a task: a new check-in, or the session's
// earlier one for the task reopened (checkinAt now, checkoutAt cleared); the session's
// lastActiveAt becomes now. A session that is not active is ErrSessionNotActive. It returns the
// check-in time.
func (s *Store) CheckinTask(ctx context.Context, sessionUUID, taskUUID string) (time.Time, error) {
	now := Now()
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*AgentSession)(nil)).Set("last_active_at = ?", now).Set("updated_at = ?", now).
			Where("uuid = ?", sessionUUID).Where("status = 'active'").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrSessionNotActive
		}
		row := SessionCheckin{SessionUUID: sessionUUID, TaskUUID: taskUUID, CheckinAt: now}
		_, err = tx.NewInsert().Model(&row).
			On("CONFLICT (session_uuid, task_uuid) DO UPDATE").Set("checkin_at = EXCLUDED.checkin_at").Set("checkout_at = NULL").
			Exec(ctx)
		return mapErr(err, "Task")
	})
	return now, err
}

// CheckoutTask ends a session's open check-in on a task; without one it changes nothing. An
// active session's lastActiveAt becomes now.
// HasCheckin says whether the session was ever checked in to the task (open or checked out).
func (s *Store) HasCheckin(ctx context.Context, sessionUUID, taskUUID string) (bool, error) {
	return s.DB.NewSelect().Model((*SessionCheckin)(nil)).Where("session_uuid = ?", sessionUUID).
		Where("task_uuid = ?", taskUUID).Exists(ctx)
}

func (s *Store) CheckoutTask(ctx context.Context, sessionUUID, taskUUID string) error {
	now := Now()
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*AgentSession)(nil)).Set("last_active_at = ?", now).Set("updated_at = ?", now).
			Where("uuid = ?", sessionUUID).Where("status = 'active'").Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*SessionCheckin)(nil)).Set("checkout_at = ?", now).
			Where("session_uuid = ?", sessionUUID).Where("task_uuid = ?", taskUUID).Where("checkout_at IS NULL").Exec(ctx)
		return err
	})
}

// TaskSession is a session with an open check-in on a task.
type TaskSession struct {
	TaskUUID    string `bun:"task_uuid"`
	SessionUUID string `bun:"session_uuid"`
	SessionName string `bun:"session_name"`
}

// WorkingSessions returns, per task, the session whose open check-in on it is the most recent
// (docs/rules.md §5.3: blockers name the session working on them).
func WorkingSessions(ctx context.Context, db bun.IDB, taskUUIDs []string) (map[string]TaskSession, error) {
	out := map[string]TaskSession{}
	if len(taskUUIDs) == 0 {
		return out, nil
	}
	var rows []TaskSession
	err := db.NewSelect().TableExpr("session_task_checkins AS c").
		ColumnExpr("c.task_uuid, c.session_uuid, s.name AS session_name").
		Join("JOIN agent_sessions AS s ON s.uuid = c.session_uuid").
		Where("c.task_uuid IN (?)", bun.List(taskUUIDs)).Where("c.checkout_at IS NULL").Where("s.status = 'active'").
		Order("c.checkin_at ASC", "c.session_uuid ASC").Scan(ctx, &rows)
	for _, r := range rows {
		out[r.TaskUUID] = r // the latest check-in wins
	}
	return out, err
}
