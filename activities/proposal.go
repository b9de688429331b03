package activities

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
)

// ProposalChange is everything one proposal command writes, applied in one transaction.
type ProposalChange struct {
	UUID        string
	CompanyUUID string
	Version     int64
	At          time.Time

	// Insert creates the proposal.
	Insert *store.Proposal
	// Row and Columns: set these columns to Row's values.
	Row     store.Proposal
	Columns []string

	Activities    []ActivityRecord
	Notifications []Notify
}

// PersistProposal applies a ProposalChange in one transaction; a change whose version the row
// already has writes nothing.
func (a *Activities) PersistProposal(ctx context.Context, c ProposalChange) error {
	return a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if c.Insert != nil {
			row := *c.Insert
			row.Version = c.Version
			res, err := tx.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return nil
			}
		} else {
			applied, err := bumpVersion(ctx, tx, "proposals", "Proposal", c.UUID, c.Version, c.At, proposalColumns(tx, &c.Row, c.Columns))
			if err != nil || !applied {
				return err
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
}

func proposalColumns(tx bun.Tx, row *store.Proposal, cols []string) *bun.UpdateQuery {
	if len(cols) == 0 {
		return tx.NewUpdate().Table("proposals")
	}
	return tx.NewUpdate().Model(row).ModelTableExpr("proposals").Column(cols...)
}

// Approval is the whole materialization of an approved proposal (SPEC 4.7). The workflow
// chose every id, so writing it twice writes it once.
type Approval struct {
	Change       ProposalChange // the proposal's move to approved, with its activity and notification
	Documents    []store.Document
	Tasks        []store.Task
	Criteria     []store.AcceptanceCriterion
	Dependencies []store.TaskDependency
}

// MaterializeApproval writes an approval in ONE transaction: the proposal row, every document,
// task, acceptance criterion and dependency edge, and the audit rows. A retry after a crash
// finds the proposal at the new version and writes nothing, so exactly one set exists.
func (a *Activities) MaterializeApproval(ctx context.Context, ap Approval) error {
	c := ap.Change
	return a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		applied, err := bumpVersion(ctx, tx, "proposals", "Proposal", c.UUID, c.Version, c.At, proposalColumns(tx, &c.Row, c.Columns))
		if err != nil || !applied {
			return err
		}
		if len(ap.Documents) > 0 {
			docs := ap.Documents
			if _, err := tx.NewInsert().Model(&docs).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Tasks) > 0 {
			tasks := ap.Tasks
			if _, err := tx.NewInsert().Model(&tasks).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Criteria) > 0 {
			acs := ap.Criteria
			if _, err := tx.NewInsert().Model(&acs).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Dependencies) > 0 {
			deps := ap.Dependencies
			if _, err := tx.NewInsert().Model(&deps).On("CONFLICT (task_uuid, depends_on_uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
}

// Revoke is a revoke cascade (SPEC 4.8).
type Revoke struct {
	Change ProposalChange // the proposal's move back to draft; its activity value is filled in here
	// ActivityValue fields known only inside the transaction are added to the "revoked" row.
	ReviewNote *string
}

// Revoked lists what a revoke cascade closed and deleted.
type Revoked struct {
	ClosedTasks      []Named
	DeletedDocuments []Named
	// TaskUUIDs are every task of the proposal, so their workflows can be told.
	TaskUUIDs []string
}

// Named is an entity's uuid and title.
type Named struct {
	UUID  string `json:"uuid"`
	Title string `json:"title"`
}

// RevokeCascade applies SPEC 4.8 in ONE transaction: it closes every task of the proposal
// (acceptance marks kept), removes their session check-ins and the dependency edges that
// other tasks have on them, deletes the proposal's documents and their comments, moves the
// proposal back to draft, and records the "revoked" activity with the counts.
func (a *Activities) RevokeCascade(ctx context.Context, r Revoke) (Revoked, error) {
	var out Revoked
	c := r.Change
	err := a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = Revoked{ClosedTasks: []Named{}, DeletedDocuments: []Named{}}
		var tasks []store.Task
		if err := tx.NewSelect().Model(&tasks).Column("uuid", "title", "status").Where("proposal_uuid = ?", c.UUID).
			Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
			return err
		}
		var docs []store.Document
		if err := tx.NewSelect().Model(&docs).Column("uuid", "title").Where("proposal_uuid = ?", c.UUID).
			Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
			return err
		}
		applied, err := bumpVersion(ctx, tx, "proposals", "Proposal", c.UUID, c.Version, c.At, proposalColumns(tx, &c.Row, c.Columns))
		if err != nil {
			return err
		}
		var ids []string
		for _, t := range tasks {
			ids = append(ids, t.UUID)
			if t.Status != "closed" {
				out.ClosedTasks = append(out.ClosedTasks, Named{UUID: t.UUID, Title: t.Title})
			}
		}
		out.TaskUUIDs = ids
		for _, d := range docs {
			out.DeletedDocuments = append(out.DeletedDocuments, Named{UUID: d.UUID, Title: d.Title})
		}
		if !applied {
			return nil // an earlier attempt committed; out still lists what it did
		}
		if len(ids) > 0 {
			if _, err := tx.NewDelete().Table("task_dependencies").Where("depends_on_uuid IN (?)", bun.List(ids)).
				Where("task_uuid NOT IN (?)", bun.List(ids)).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewUpdate().Table("tasks").Set("status = 'closed'").Set("updated_at = ?", c.At).
				Where("uuid IN (?)", bun.List(ids)).Where("status <> 'closed'").Exec(ctx); err != nil {
				return err
			}
		}
		if len(docs) > 0 {
			var docIDs []string
			for _, d := range docs {
				docIDs = append(docIDs, d.UUID)
			}
			if _, err := tx.NewDelete().Table("comments").Where("target_type = 'document'").
				Where("target_uuid IN (?)", bun.List(docIDs)).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewDelete().Table("documents").Where("uuid IN (?)", bun.List(docIDs)).Exec(ctx); err != nil {
				return err
			}
		}
		for i := range c.Activities {
			if c.Activities[i].Action == "revoked" {
				c.Activities[i].Value = MarshalValue(map[string]any{"reviewNote": r.ReviewNote,
					"closedTaskCount": len(out.ClosedTasks), "deletedDocumentCount": len(out.DeletedDocuments)})
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
	return out, err
}

// LoadInputIdeas reads the input ideas of a proposal, in input order (see store.LoadIdeaFacts).
func (a *Activities) LoadInputIdeas(ctx context.Context, companyUUID string, uuids []string) ([]store.IdeaFacts, error) {
	return a.Store.LoadIdeaFacts(ctx, companyUUID, uuids)
}
