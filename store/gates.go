package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Human gates (docs/rules.md §6.7): a project's gate policy and the gate requests its entities'
// workflows write. The store keeps facts; the rules live in workflows and app.

// GatePolicy is a project's gate policy (gate_policies). A project without a row has the zero
// policy: nothing gated, no expiry, no separation of duties.
type GatePolicy struct {
	bun.BaseModel `bun:"table:gate_policies"`

	ProjectUUID string `bun:"project_uuid,pk"`
	CompanyUUID string `bun:"company_uuid"`
	// Commands is the comma-separated list of gated commands (vocab.GateCommands); see Gated.
	Commands string `bun:"commands"`
	// ExpireAfterSeconds is how long a gate request waits before it expires; 0 never.
	ExpireAfterSeconds int       `bun:"expire_after_seconds"`
	SeparateDuties     bool      `bun:"separate_duties"`
	UpdatedAt          time.Time `bun:"updated_at"`
}

// GatedCommands lists the policy's gated commands, in vocab.GateCommands order.
func (p GatePolicy) GatedCommands() []string {
	var out []string
	for _, c := range vocab.GateCommands {
		if p.Gates(c) {
			out = append(out, c)
		}
	}
	return out
}

// Gates reports whether the policy holds command for a person.
func (p GatePolicy) Gates(command string) bool {
	return slices.Contains(strings.Split(p.Commands, ","), command)
}

// GatePolicyOf returns the project's gate policy (the zero policy when it has none).
func (s *Store) GatePolicyOf(ctx context.Context, projectUUID string) (GatePolicy, error) {
	p := GatePolicy{ProjectUUID: projectUUID}
	err := s.DB.NewSelect().Model(&p).Where("project_uuid = ?", projectUUID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return GatePolicy{ProjectUUID: projectUUID}, nil
	}
	return p, err
}

// SetGatePolicy stores a project's gate policy, replacing the one it had. The caller has
// validated it.
func (s *Store) SetGatePolicy(ctx context.Context, p GatePolicy) error {
	p.UpdatedAt = Now()
	_, err := s.DB.NewInsert().Model(&p).On("CONFLICT (project_uuid) DO UPDATE").
		Set("commands = EXCLUDED.commands").Set("expire_after_seconds = EXCLUDED.expire_after_seconds").
		Set("separate_duties = EXCLUDED.separate_duties").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return err
}

// MaxGateInputBytes bounds the command input a gate request keeps.
const MaxGateInputBytes = 16 << 10

// GateRequest is one agent's call of a gated command (gate_requests), written by the entity's
// workflow: awaiting until a person decides it (applied or refused) or it expires.
type GateRequest struct {
	bun.BaseModel `bun:"table:gate_requests"`

	UUID            string     `bun:"uuid,pk"`
	CompanyUUID     string     `bun:"company_uuid"`
	ProjectUUID     string     `bun:"project_uuid"`
	EntityType      string     `bun:"entity_type"`
	EntityUUID      string     `bun:"entity_uuid"`
	EntityTitle     string     `bun:"entity_title"`
	Command         string     `bun:"command"`
	Input           string     `bun:"input"` // the command's input as JSON, at most MaxGateInputBytes
	RequestedByType string     `bun:"requested_by_type"`
	RequestedByUUID string     `bun:"requested_by_uuid"`
	RequestedByName string     `bun:"requested_by_name"`
	Status          string     `bun:"status"`
	DecidedByUUID   *string    `bun:"decided_by_uuid"`
	DecidedByName   *string    `bun:"decided_by_name"`
	Note            *string    `bun:"note"`
	ExpiresAt       *time.Time `bun:"expires_at"`
	CreatedAt       time.Time  `bun:"created_at"`
	DecidedAt       *time.Time `bun:"decided_at"`
	UpdatedAt       time.Time  `bun:"updated_at"`
}

// GateSettle ends a gate request: Status applied, refused or expired, by whom (nil on expiry),
// with a note, at At.
type GateSettle struct {
	UUID          string
	Status        string
	DecidedByUUID *string
	DecidedByName *string
	Note          *string
	At            time.Time
}

// RecordGate inserts a gate request with its notifications in one transaction. A request whose
// row exists already (a retried write) writes nothing. The notification's recipients are the
// ones given plus the project's members who hold editor or admin (the people who can decide).
func (s *Store) RecordGate(ctx context.Context, g GateRequest, notify NotifySpec) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewInsert().Model(&g).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
		if err != nil {
			return fmt.Errorf("insert gate request: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		var deciders []string
		if err := tx.NewSelect().Table("project_members").Column("user_uuid").Where("project_uuid = ?", g.ProjectUUID).
			Where("role IN (?)", bun.List([]string{"editor", "admin"})).Order("created_at ASC").Scan(ctx, &deciders); err != nil {
			return fmt.Errorf("read the project's deciders: %w", err)
		}
		for _, u := range deciders {
			notify.Recipients = append(notify.Recipients, Recipient{Type: "user", UUID: u})
		}
		return InsertNotifications(ctx, tx, g.CompanyUUID, notify)
	})
}

// SettleGate ends an awaiting gate request with its notifications in one transaction. A request
// already at that status (a retried write) writes nothing; one at another final status, or
// missing, is a conflict.
func (s *Store) SettleGate(ctx context.Context, c GateSettle, notify NotifySpec) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var g GateRequest
		if err := tx.NewSelect().Model(&g).Where("uuid = ?", c.UUID).Scan(ctx); err != nil {
			return mapErr(err, "Gate")
		}
		if g.Status == c.Status {
			return nil
		}
		if g.Status != vocab.GateAwaiting {
			return fmt.Errorf("%w: gate %s is %s, not awaiting", ErrConflict, c.UUID, g.Status)
		}
		if _, err := tx.NewUpdate().Model((*GateRequest)(nil)).Where("uuid = ?", c.UUID).
			Set("status = ?", c.Status).Set("decided_by_uuid = ?", c.DecidedByUUID).Set("decided_by_name = ?", c.DecidedByName).
			Set("note = ?", c.Note).Set("decided_at = ?", c.At).Set("updated_at = ?", c.At).Exec(ctx); err != nil {
			return fmt.Errorf("settle gate request: %w", err)
		}
		return InsertNotifications(ctx, tx, g.CompanyUUID, notify)
	})
}

// Gate returns a gate request of the company by uuid (not found: "Gate not found").
func (s *Store) Gate(ctx context.Context, companyUUID, uuid string) (*GateRequest, error) {
	if !vocab.IsUUID(uuid) {
		return nil, NotFound("Gate")
	}
	var g GateRequest
	if err := s.DB.NewSelect().Model(&g).Where("uuid = ?", strings.ToLower(uuid)).
		Where("company_uuid = ?", companyUUID).Scan(ctx); err != nil {
		return nil, mapErr(err, "Gate")
	}
	return &g, nil
}

// GateFilter narrows ListGateRequests: a project ("" any), a status ("" any), at most Limit
// rows (0: 100), newest first.
type GateFilter struct {
	ProjectUUID string
	Status      string
	Limit       int
}

// ListGateRequests lists the gate requests of the company's projects the caller can see
// (docs/rules.md §6.3; every project of the company for an operator), newest first.
func (s *Store) ListGateRequests(ctx context.Context, c Caller, operator bool, f GateFilter) ([]GateRequest, error) {
	out := []GateRequest{}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := s.DB.NewSelect().Model(&out).Where("company_uuid = ?", c.CompanyUUID)
	if !operator {
		q = q.Where("project_uuid IN (?)", s.visibleProjectIDs(c))
	}
	if f.ProjectUUID != "" {
		q = q.Where("project_uuid = ?", f.ProjectUUID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	err := q.Order("created_at DESC", "uuid ASC").Limit(int64(f.Limit)).Scan(ctx)
	return out, err
}

// TaskWorkers lists the agents (uuids) who worked on a task: each one that held it (claimed it
// or was assigned to it, from its "assigned" activity rows; only the holder reports work) and
// each one that submitted it (docs/rules.md §6.7, separation of duties).
func (s *Store) TaskWorkers(ctx context.Context, taskUUID string) ([]string, error) {
	var rows []Activity
	if err := s.DB.NewSelect().Model(&rows).Column("actor_uuid", "action", "value").Where("target_type = 'task'").
		Where("target_uuid = ?", taskUUID).Where("action IN (?)", bun.List([]string{"assigned", "submitted"})).
		Scan(ctx); err != nil {
		return nil, err
	}
	var who []string
	for _, r := range rows {
		u := r.ActorUUID
		if r.Action == "assigned" {
			var v struct {
				AssigneeUUID string `json:"assigneeUuid"`
			}
			if json.Unmarshal(r.Value, &v) != nil || v.AssigneeUUID == "" {
				continue
			}
			u = v.AssigneeUUID
		}
		if !slices.Contains(who, u) {
			who = append(who, u)
		}
	}
	return who, nil
}
