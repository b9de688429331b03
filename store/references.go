package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Reference is a link from an idea, proposal or task to a url (docs/rules.md §1.16). References
// are records: plain transactions, no workflow.
type Reference struct {
	bun.BaseModel `bun:"table:reference_artifacts,alias:reference"`

	UUID          string    `bun:"uuid,pk"`
	CompanyUUID   string    `bun:"company_uuid"`
	TargetType    string    `bun:"target_type"`
	TargetUUID    string    `bun:"target_uuid"`
	Type          string    `bun:"type"`
	URL           string    `bun:"url"`
	Title         string    `bun:"title"`
	Notes         *string   `bun:"notes"`
	CreatedByType string    `bun:"created_by_type"`
	CreatedByUUID string    `bun:"created_by_uuid"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`

	// ActivityUUID is the uuid of the reference_added activity AddReferences records with it,
	// derived by the caller so that a retry records nothing twice; not stored on the row.
	ActivityUUID string `bun:"-"`
}

// Target is the idea, proposal or task a reference points at, with the project it is in.
type Target struct {
	Type        string // "idea", "proposal" or "task"
	UUID        string
	ProjectUUID string
}

// TargetAccess is the project-access gate for a reference target (docs/rules.md §6.3): the
// entity's own gate (IdeaAccess, ProposalAccess, TaskAccess), so a hidden or missing one is
// "<Entity> not found" and a visible one below need is ErrForbidden.
func (s *Store) TargetAccess(ctx context.Context, c Caller, targetType, targetUUID string, need Access) (*Target, error) {
	t := Target{Type: targetType, UUID: targetUUID}
	switch targetType {
	case "idea":
		i, _, err := s.IdeaAccess(ctx, c, targetUUID, need)
		if err != nil {
			return nil, err
		}
		t.ProjectUUID = i.ProjectUUID
	case "proposal":
		p, _, err := s.ProposalAccess(ctx, c, targetUUID, need)
		if err != nil {
			return nil, err
		}
		t.ProjectUUID = p.ProjectUUID
	case "task":
		x, _, err := s.TaskAccess(ctx, c, targetUUID, need)
		if err != nil {
			return nil, err
		}
		t.ProjectUUID = x.ProjectUUID
	default:
		return nil, NotFound("Target")
	}
	return &t, nil
}

// targetTables maps a reference target type to its table.
var targetTables = map[string]string{"idea": "ideas", "proposal": "proposals", "task": "tasks"}

// MaxReferences is how many references one idea, proposal or task may have (docs/rules.md §1.16).
const MaxReferences = 100

// TooManyReferencesError: adding references would take the target past MaxReferences.
type TooManyReferencesError struct{ TargetType string }

func (e *TooManyReferencesError) Error() string {
	return fmt.Sprintf("the %s already has %d references, the most one may have. Remove one with "+
		"chorus_remove_reference before adding another.", e.TargetType, MaxReferences)
}

// References returns a page of a target's references, oldest first (docs/rules.md §1.16), and
// how many it has.
func (s *Store) References(ctx context.Context, targetType, targetUUID string, limit, offset int) ([]Reference, int, error) {
	rows := []Reference{}
	n, err := s.DB.NewSelect().Model(&rows).Where("target_type = ?", targetType).Where("target_uuid = ?", targetUUID).
		Order("created_at ASC", "uuid ASC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(n), err
}

// ReferenceAccess returns a reference of the caller's company whose target the caller can reach
// at need, and the target. A reference that does not exist, belongs to another company, or whose
// target is hidden or gone is ErrNotFound (the caller words it); a visible target below need is
// ErrForbidden.
func (s *Store) ReferenceAccess(ctx context.Context, c Caller, refUUID string, need Access) (*Reference, *Target, error) {
	if !vocab.IsUUID(refUUID) {
		return nil, nil, NotFound("Reference")
	}
	var r Reference
	err := s.DB.NewSelect().Model(&r).Where("uuid = ?", refUUID).Where("company_uuid = ?", c.CompanyUUID).Scan(ctx)
	if err != nil {
		return nil, nil, mapErr(err, "Reference")
	}
	t, err := s.TargetAccess(ctx, c, r.TargetType, r.TargetUUID, need)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("Reference")
	}
	if err != nil {
		return nil, nil, err
	}
	return &r, t, nil
}

// AddReferences stores refs, all on target, each with its reference_added activity (docs/rules.md
// §7.1), in one transaction, and returns the stored rows in order. A reference whose uuid is
// already stored was written by an earlier attempt of the same call: it is returned as stored and
// nothing is written again, so a retry adds nothing twice (docs/write-path.md, "Exactly once").
// The target must still exist when the transaction runs; otherwise nothing is written and the
// error is "<Entity> not found".
func (s *Store) AddReferences(ctx context.Context, target Target, refs []Reference) ([]Reference, error) {
	table, ok := targetTables[target.Type]
	if !ok {
		return nil, NotFound("Target")
	}
	out := make([]Reference, len(refs))
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The target's row is held, so that adds racing on it count each other (docs/rules.md §1.16).
		if err := lockRow(ctx, tx, table, target.UUID); err != nil {
			return err
		}
		exists, err := tx.NewSelect().Table(table).Where("uuid = ?", target.UUID).Exists(ctx)
		if err != nil {
			return err
		}
		if !exists {
			return NotFound(entityName(target.Type))
		}
		ids := make([]string, len(refs))
		for i, r := range refs {
			ids[i] = r.UUID
		}
		have, err := tx.NewSelect().Model((*Reference)(nil)).Where("target_type = ?", target.Type).
			Where("target_uuid = ?", target.UUID).Count(ctx)
		if err != nil {
			return err
		}
		stored, err := tx.NewSelect().Model((*Reference)(nil)).Where("uuid IN (?)", bun.List(ids)).Count(ctx)
		if err != nil {
			return err
		}
		if int(have)+len(refs)-int(stored) > MaxReferences { // a retry's references are stored already and count once
			return &TooManyReferencesError{TargetType: target.Type}
		}
		for i, r := range refs {
			res, err := tx.NewInsert().Model(&r).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
			if err != nil {
				return mapErr(err, "Reference")
			}
			if n, _ := res.RowsAffected(); n == 0 {
				if err := tx.NewSelect().Model(&out[i]).Where("uuid = ?", r.UUID).Scan(ctx); err != nil {
					return mapErr(err, "Reference")
				}
				continue
			}
			out[i] = r
			act := Activity{UUID: r.ActivityUUID, CompanyUUID: r.CompanyUUID, ProjectUUID: target.ProjectUUID,
				TargetType: target.Type, TargetUUID: target.UUID, ActorType: r.CreatedByType, ActorUUID: r.CreatedByUUID,
				Action: "reference_added", Value: jsonValue(map[string]any{"referenceUuid": r.UUID, "type": r.Type,
					"url": r.URL, "title": r.Title}), CreatedAt: r.CreatedAt}
			if err := writeAudit(ctx, tx, r.CompanyUUID, []Activity{act}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReferenceEdit is what UpdateReference changes; nil fields stay. ClearNotes sets notes to null.
type ReferenceEdit struct {
	Type, URL, Title, Notes *string
	ClearNotes              bool
}

// UpdateReference applies e to a reference and returns the row as stored (no activity,
// docs/rules.md §7.1). A reference gone meanwhile is ErrNotFound.
func (s *Store) UpdateReference(ctx context.Context, refUUID string, e ReferenceEdit) (*Reference, error) {
	var r Reference
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*Reference)(nil)).Set("updated_at = ?", Now()).Where("uuid = ?", refUUID)
		if e.Type != nil {
			q = q.Set("type = ?", *e.Type)
		}
		if e.URL != nil {
			q = q.Set("url = ?", *e.URL)
		}
		if e.Title != nil {
			q = q.Set("title = ?", *e.Title)
		}
		switch {
		case e.ClearNotes:
			q = q.Set("notes = NULL")
		case e.Notes != nil:
			q = q.Set("notes = ?", *e.Notes)
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
		return tx.NewSelect().Model(&r).Where("uuid = ?", refUUID).Scan(ctx)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Reference")
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// RemoveReference deletes a reference; one already gone is ErrNotFound.
func (s *Store) RemoveReference(ctx context.Context, refUUID string) error {
	res, err := s.DB.NewDelete().Model((*Reference)(nil)).Where("uuid = ?", refUUID).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("Reference")
	}
	return nil
}

// entityName is the capitalised name of an entity type, as "<Entity> not found" uses it.
func entityName(typ string) string {
	switch typ {
	case "idea":
		return "Idea"
	case "proposal":
		return "Proposal"
	case "task":
		return "Task"
	case "document":
		return "Document"
	}
	return "Target"
}
