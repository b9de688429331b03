package store

import (
	"github.com/chorus-dev/chorus/vocab"

	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"

	"github.com/uptrace/bun"
)

// IdeaChange is everything one idea command writes, in one transaction (docs/write-path.md).
type IdeaChange struct {
	Write
	UUID        string `json:"uuid"`
	CompanyUUID string `json:"companyUuid"`
	ProjectUUID string `json:"projectUuid"`

	// Parent, when the change gives the idea a parent, is checked again inside the transaction
	// (docs/rules.md §5.5): with the project locked, the parent must still exist in the project
	// and not descend from the idea, or the change fails with a *LineageError and writes nothing.
	Parent *string `json:"parent"`

	// Insert creates the idea (chorus_pm_create_idea); Version and ChangeID are set from Write.
	Insert *Idea `json:"insert"`
	// Patch sets fields of the idea's row.
	Patch IdeaPatch `json:"patch"`
	// NewRound is an elaboration round to add, with its questions.
	NewRound *ElaborationRound `json:"newRound"`
	// Answers set the answer fields of these questions (by uuid).
	Answers []ElaborationQuestion `json:"answers"`
	// RoundStatus sets round statuses, by round uuid.
	RoundStatus map[string]string `json:"roundStatus"`
	// Delete orphans the idea's children and deletes it with its rounds.
	Delete bool `json:"delete"`
	// Mentions are the new mentions of a content edit (docs/rules.md §7.3), recorded with it.
	Mentions *MentionText `json:"mentions"`

	Activities    []Activity   `json:"activities"`
	Notifications []NotifySpec `json:"notifications"`

	// The shape of a change before Patch: a row with the columns to set. An activity an older
	// worker scheduled may be retried by this one with its old input, which these fields keep
	// decoding; new changes leave them empty.
	LegacySet     *Idea    `json:"set,omitempty"`
	LegacyColumns []string `json:"columns,omitempty"`
}

// row is the idea row's new values and the columns they go to.
func (c IdeaChange) row() (Idea, []string) {
	if c.LegacySet != nil {
		return *c.LegacySet, c.LegacyColumns
	}
	return c.Patch.row()
}

// SetsProgress reports whether the change sets any of the idea's fields that decide its derived status
// or its place under its parent (docs/rules.md §5.1): status, elaboration status, the theme
// flag, the parent.
func (c IdeaChange) SetsProgress() bool {
	_, cols := c.row()
	return slices.ContainsFunc(cols, func(col string) bool {
		return slices.Contains([]string{"status", "elaboration_status", "is_container", "parent_uuid"}, col)
	})
}

// SetsParent reports whether the change gives the idea another parent (or none).
func (c IdeaChange) SetsParent() bool {
	_, cols := c.row()
	return slices.Contains(cols, "parent_uuid")
}

// SetsTheme reports whether the change sets the idea's theme flag.
func (c IdeaChange) SetsTheme() bool {
	_, cols := c.row()
	return slices.Contains(cols, "is_container")
}

// NewStatus is the status the change moves the idea to, "" when it leaves the status alone.
func (c IdeaChange) NewStatus() vocab.IdeaStatus {
	if row, cols := c.row(); slices.Contains(cols, "status") {
		return row.Status
	}
	return ""
}

// ApplyIdeaChange applies c by the write protocol: once, from the version it expects; a retry of
// an applied change writes nothing; anything else is a *ProjectionConflict.
func (s *Store) ApplyIdeaChange(ctx context.Context, c IdeaChange) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Parent links span ideas: changes that make or break them are serialized per project.
		if c.Parent != nil || c.Delete {
			if err := lockProject(ctx, tx, c.ProjectUUID); err != nil {
				return err
			}
		}
		if c.Parent != nil {
			// Checked before the write: the foreign key would refuse a parent that is gone.
			l, err := ideaLineage(ctx, tx, c.CompanyUUID, c.UUID, *c.Parent)
			if err != nil {
				return err
			}
			if !l.ParentFound || l.ParentProject != c.ProjectUUID || l.ParentIsDescendant {
				if done, err := appliedBefore(ctx, tx, "ideas", c.UUID, c.Write); err != nil || done {
					return err // an earlier attempt applied it, before the parent changed
				}
				return &LineageError{Lineage: l}
			}
		}
		var applied bool
		var err error
		switch {
		case c.Insert != nil:
			row := *c.Insert
			row.Version, row.ChangeID = c.Version(), c.ID
			applied, err = claimNew(ctx, tx, "ideas", c.UUID, c.Write, tx.NewInsert().Model(&row))
		case c.Delete:
			if applied, err = claimDelete(ctx, tx, "ideas", c.UUID, c.Write); err == nil && applied {
				_, err = tx.NewUpdate().Table("ideas").Set("parent_uuid = NULL").Set("updated_at = ?", c.At).
					Where("parent_uuid = ?", c.UUID).Exec(ctx)
			}
		default:
			if err := c.Mentions.readPrevious(ctx, tx, "ideas"); err != nil {
				return err
			}
			var q *bun.UpdateQuery
			if row, cols := c.row(); len(cols) > 0 {
				q = tx.NewUpdate().Model(&row).ModelTableExpr("ideas").Column(cols...)
			}
			applied, err = claim(ctx, tx, "ideas", c.UUID, c.Write, q)
		}
		if err != nil || !applied {
			return err
		}
		if r := c.NewRound; r != nil {
			if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
				return err
			}
			if len(r.Questions) > 0 {
				qs := r.Questions
				if _, err := tx.NewInsert().Model(&qs).Exec(ctx); err != nil {
					return err
				}
			}
		}
		for i := range c.Answers {
			q := c.Answers[i]
			if _, err := tx.NewUpdate().Model(&q).
				Column("selected_option_id", "custom_text", "answered_at", "answered_by_type", "answered_by_uuid").
				WherePK().Exec(ctx); err != nil {
				return err
			}
		}
		for _, roundUUID := range slices.Sorted(maps.Keys(c.RoundStatus)) {
			if _, err := tx.NewUpdate().Table("elaboration_rounds").Set("status = ?", c.RoundStatus[roundUUID]).
				Set("updated_at = ?", c.At).Where("uuid = ?", roundUUID).Exec(ctx); err != nil {
				return err
			}
		}
		if err := writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications); err != nil {
			return err
		}
		return writeMentions(ctx, tx, c.CompanyUUID, c.Mentions)
	})
}

// Lineage is what docs/rules.md §5.5 checks about a proposed parent idea.
type Lineage struct {
	// CurrentParent is the idea's parent now (nil: none, or the idea does not exist yet).
	CurrentParent *string `json:"currentParent"`
	// ParentFound: the proposed parent exists in the company.
	ParentFound bool `json:"parentFound"`
	// ParentProject is the parent's project.
	ParentProject string `json:"parentProject"`
	// ParentIsDescendant: the proposed parent is the idea itself or one of its descendants.
	ParentIsDescendant bool `json:"parentIsDescendant"`
}

// LineageError: a change's parent idea no longer passes docs/rules.md §5.5 when the change is
// written (another command deleted or moved an idea since the workflow checked). Lineage is what
// the transaction found; nothing was written.
type LineageError struct{ Lineage Lineage }

func (e *LineageError) Error() string { return "the parent idea changed since it was checked" }

// IdeaLineage reads what docs/rules.md §5.5 needs to accept parentUUID as the parent of ideaUUID, and the
// idea's current parent. With parentUUID "" it reads only the current parent.
func (s *Store) IdeaLineage(ctx context.Context, companyUUID, ideaUUID, parentUUID string) (Lineage, error) {
	return ideaLineage(ctx, s.DB, companyUUID, ideaUUID, parentUUID)
}

func ideaLineage(ctx context.Context, db bun.IDB, companyUUID, ideaUUID, parentUUID string) (Lineage, error) {
	var out Lineage
	var self Idea
	if err := db.NewSelect().Model(&self).Column("parent_uuid").Where("uuid = ?", ideaUUID).Scan(ctx); err == nil {
		out.CurrentParent = self.ParentUUID
	} else if !errors.Is(err, sql.ErrNoRows) {
		return out, err
	}
	if parentUUID == "" {
		return out, nil
	}
	var parent Idea
	err := db.NewSelect().Model(&parent).Column("uuid", "project_uuid", "parent_uuid").
		Where("uuid = ?", parentUUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.ParentFound, out.ParentProject = true, parent.ProjectUUID
	// Walk up from the proposed parent; meeting the idea means the parent is its descendant.
	cur := &parent
	for hops := 0; cur != nil && hops < 10000; hops++ {
		if cur.UUID == ideaUUID {
			out.ParentIsDescendant = true
			return out, nil
		}
		if cur.ParentUUID == nil {
			break
		}
		var next Idea
		err := db.NewSelect().Model(&next).Column("uuid", "parent_uuid").Where("uuid = ?", *cur.ParentUUID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return out, err
		}
		cur = &next
	}
	return out, nil
}
