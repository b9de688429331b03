package activities

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
)

// IdeaChange is everything one idea command writes, applied in one transaction by PersistIdea.
type IdeaChange struct {
	UUID        string
	CompanyUUID string
	Version     int64 // the idea's version after this change
	At          time.Time

	// Insert creates the idea (chorus_pm_create_idea).
	Insert *store.Idea
	// Row and Columns: set these columns of the idea to Row's values.
	Row     store.Idea
	Columns []string
	// NewRound is an elaboration round to add, with its questions.
	NewRound *store.ElaborationRound
	// Answers set the answer fields of these questions (by uuid).
	Answers []store.ElaborationQuestion
	// RoundStatus sets round statuses, by round uuid.
	RoundStatus map[string]string
	// Delete orphans the idea's children and deletes it with its rounds.
	Delete bool

	Activities    []ActivityRecord
	Notifications []Notify
}

// PersistIdea applies an IdeaChange in one transaction. It is idempotent: when the idea
// already has Version (an earlier attempt committed), it writes nothing.
func (a *Activities) PersistIdea(ctx context.Context, c IdeaChange) error {
	return a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		switch {
		case c.Insert != nil:
			row := *c.Insert
			row.Version = c.Version
			res, err := tx.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return nil // created by an earlier attempt
			}
		case c.Delete:
			if _, err := tx.NewUpdate().Table("ideas").Set("parent_uuid = NULL").Set("updated_at = ?", c.At).
				Where("parent_uuid = ?", c.UUID).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewDelete().Table("ideas").Where("uuid = ?", c.UUID).Exec(ctx); err != nil {
				return err
			}
		default:
			row := c.Row
			q := tx.NewUpdate().Model(&row).ModelTableExpr("ideas")
			if len(c.Columns) > 0 {
				q = q.Column(c.Columns...)
			} else {
				q = tx.NewUpdate().Table("ideas")
			}
			applied, err := bumpVersion(ctx, tx, "ideas", "Idea", c.UUID, c.Version, c.At, q)
			if err != nil || !applied {
				return err
			}
		}
		if r := c.NewRound; r != nil {
			if _, err := tx.NewInsert().Model(r).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
			if len(r.Questions) > 0 {
				qs := r.Questions
				if _, err := tx.NewInsert().Model(&qs).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
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
		for roundUUID, status := range c.RoundStatus {
			if _, err := tx.NewUpdate().Table("elaboration_rounds").Set("status = ?", status).Set("updated_at = ?", c.At).
				Where("uuid = ?", roundUUID).Exec(ctx); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
}

// IdeaRefs are the facts about other ideas an idea command checks (lineage, SPEC 4.5).
type IdeaRefs struct {
	// ParentFound: the proposed parent exists in the company.
	ParentFound bool
	// ParentProject is the parent's project.
	ParentProject string
	// ParentIsDescendant: the proposed parent is the idea itself or one of its descendants.
	ParentIsDescendant bool
}

// LookupIdeaRefs reads what SPEC 4.5 needs to accept parentUUID as the parent of ideaUUID.
func (a *Activities) LookupIdeaRefs(ctx context.Context, companyUUID, ideaUUID, parentUUID string) (IdeaRefs, error) {
	var out IdeaRefs
	var parent store.Idea
	err := a.Store.DB.NewSelect().Model(&parent).Column("uuid", "project_uuid", "parent_uuid").
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
		var next store.Idea
		err := a.Store.DB.NewSelect().Model(&next).Column("uuid", "parent_uuid").Where("uuid = ?", *cur.ParentUUID).Scan(ctx)
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
