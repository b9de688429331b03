package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// MaxDraftBytes bounds a proposal's drafts, as the JSON the row stores: they are read back into
// one workflow's history to validate and approve the proposal, and Temporal refuses payloads
// over 2 MB (docs/write-path.md, "Bounded state and payloads").
const MaxDraftBytes = 500_000

// ErrDraftsTooLarge is returned when a draft change would grow a proposal's drafts past
// MaxDraftBytes; nothing is written.
var ErrDraftsTooLarge = errors.New("the proposal's drafts would be too large")

// DraftsTooLargeError says by how much a draft change would overflow MaxDraftBytes.
type DraftsTooLargeError struct{ Bytes int }

func (e *DraftsTooLargeError) Error() string {
	return fmt.Sprintf("the proposal's drafts would take %d bytes, more than the %d a proposal holds", e.Bytes, MaxDraftBytes)
}

// Is makes errors.Is(err, ErrDraftsTooLarge) hold.
func (e *DraftsTooLargeError) Is(target error) bool { return target == ErrDraftsTooLarge }

// TaskDraftPatch changes a task draft: nil fields are left alone.
type TaskDraftPatch struct {
	UUID        string
	Title       *string
	Description *string
	StoryPoints *float64
	Priority    *string
	Kind        *string
	// Criteria replace the criteria when SetCriteria.
	SetCriteria bool
	Criteria    []CriterionDraft
	// DependsOn replaces the dependencies when SetDependsOn (nil: none).
	SetDependsOn bool
	DependsOn    []string
}

// DocumentDraftPatch changes a document draft: nil fields are left alone.
type DocumentDraftPatch struct {
	UUID    string
	Type    *string
	Title   *string
	Content *string
}

// ProposalChange is everything one proposal command writes, in one transaction.
type ProposalChange struct {
	Write
	UUID        string
	CompanyUUID string

	// Insert creates the proposal; Version and ChangeID are set from Write.
	Insert *Proposal
	// Patch sets fields of the proposal's row.
	Patch ProposalPatch `json:"patch"`
	// Draft edits, applied to the stored drafts (at most one kind per change).
	AddDocument    *DocumentDraft
	UpdateDocument *DocumentDraftPatch
	RemoveDocument string
	AddTask        *TaskDraft
	UpdateTask     *TaskDraftPatch
	// RemoveTask removes a task draft and every other draft's dependency on it.
	RemoveTask string

	Activities    []Activity
	Notifications []NotifySpec

	// The shape of a change before Patch (a row with the columns to set), which an activity an
	// older worker scheduled may still carry; new changes leave it empty.
	LegacySet     *Proposal `json:"set,omitempty"`
	LegacyColumns []string  `json:"columns,omitempty"`
}

// ApplyProposalChange applies c by the write protocol. A draft edit that would grow the drafts
// past MaxDraftBytes is refused with a *DraftsTooLargeError and writes nothing.
func (s *Store) ApplyProposalChange(ctx context.Context, c ProposalChange) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if c.Insert != nil {
			row := *c.Insert
			row.Version, row.ChangeID = c.Version(), c.ID
			applied, err := claimNew(ctx, tx, "proposals", c.UUID, c.Write, tx.NewInsert().Model(&row))
			if err != nil || !applied {
				return err
			}
			return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
		}
		set, cols := c.row()
		if c.editsDrafts() {
			var cur Proposal
			if err := tx.NewSelect().Model(&cur).Column("document_drafts", "task_drafts").Where("uuid = ?", c.UUID).Scan(ctx); err != nil {
				return mapErr(err, "Proposal")
			}
			set.DocumentDrafts, set.TaskDrafts = c.editDrafts(cur.DocumentDrafts, cur.TaskDrafts)
			b, _ := json.Marshal([]any{set.DocumentDrafts, set.TaskDrafts})
			if len(b) > MaxDraftBytes {
				return &DraftsTooLargeError{Bytes: len(b)}
			}
			cols = append(slices.Clone(cols), "document_drafts", "task_drafts")
		}
		var q *bun.UpdateQuery
		if len(cols) > 0 {
			q = tx.NewUpdate().Model(&set).ModelTableExpr("proposals").Column(cols...)
		}
		applied, err := claim(ctx, tx, "proposals", c.UUID, c.Write, q)
		if err != nil || !applied {
			return err
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
}

func (c ProposalChange) editsDrafts() bool {
	return c.AddDocument != nil || c.UpdateDocument != nil || c.RemoveDocument != "" || c.AddTask != nil ||
		c.UpdateTask != nil || c.RemoveTask != ""
}

// editDrafts returns the drafts with c's edit applied; empty lists are stored as null.
func (c ProposalChange) editDrafts(docs []DocumentDraft, tasks []TaskDraft) ([]DocumentDraft, []TaskDraft) {
	docs, tasks = slices.Clone(docs), slices.Clone(tasks)
	if d := c.AddDocument; d != nil {
		docs = append(docs, *d)
	}
	if p := c.UpdateDocument; p != nil {
		if i := slices.IndexFunc(docs, func(d DocumentDraft) bool { return d.UUID == p.UUID }); i >= 0 {
			if p.Type != nil {
				docs[i].Type = *p.Type
			}
			if p.Title != nil {
				docs[i].Title = *p.Title
			}
			if p.Content != nil {
				docs[i].Content = *p.Content
			}
		}
	}
	if c.RemoveDocument != "" {
		docs = slices.DeleteFunc(docs, func(d DocumentDraft) bool { return d.UUID == c.RemoveDocument })
	}
	if t := c.AddTask; t != nil {
		tasks = append(tasks, *t)
	}
	if p := c.UpdateTask; p != nil {
		if i := slices.IndexFunc(tasks, func(t TaskDraft) bool { return t.UUID == p.UUID }); i >= 0 {
			t := &tasks[i]
			if p.Title != nil {
				t.Title = *p.Title
			}
			if p.Description != nil {
				t.Description = p.Description
			}
			if p.StoryPoints != nil {
				t.StoryPoints = p.StoryPoints
			}
			if p.Priority != nil {
				t.Priority = p.Priority
			}
			if p.Kind != nil {
				t.Kind = p.Kind
			}
			if p.SetCriteria {
				t.AcceptanceCriteriaItems = p.Criteria
			}
			if p.SetDependsOn {
				t.DependsOnDraftUUIDs = nilIfNone(p.DependsOn)
			}
		}
	}
	if id := c.RemoveTask; id != "" {
		tasks = slices.DeleteFunc(tasks, func(t TaskDraft) bool { return t.UUID == id })
		for i := range tasks {
			tasks[i].DependsOnDraftUUIDs = nilIfNone(slices.DeleteFunc(slices.Clone(tasks[i].DependsOnDraftUUIDs),
				func(u string) bool { return u == id }))
		}
	}
	return nilIfNone(docs), nilIfNone(tasks)
}

func nilIfNone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// ProposalDrafts reads a proposal's row with its drafts, for validation and approval.
func (s *Store) ProposalDrafts(ctx context.Context, proposalUUID string) (Proposal, error) {
	var p Proposal
	err := s.DB.NewSelect().Model(&p).Where("uuid = ?", proposalUUID).Scan(ctx)
	return p, mapErr(err, "Proposal")
}

// Approval is the whole materialization of an approved proposal (docs/rules.md §5.6), ids derived by the
// workflow from its change, so writing it twice writes it once.
type Approval struct {
	Change       ProposalChange // the proposal's move to approved, with its activity and notification
	Documents    []Document
	Tasks        []Task
	Criteria     []AcceptanceCriterion
	Dependencies []TaskDependency
}

// ApplyApproval writes an approval in ONE transaction: the proposal row, every document, task
// (version 1, marked with the approval's change id), acceptance criterion and dependency edge,
// and the audit rows. A retry after a crash finds the change applied and writes nothing, so
// exactly one set exists.
func (s *Store) ApplyApproval(ctx context.Context, ap Approval) error {
	c := ap.Change
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var q *bun.UpdateQuery
		if row, cols := c.row(); len(cols) > 0 {
			q = tx.NewUpdate().Model(&row).ModelTableExpr("proposals").Column(cols...)
		}
		applied, err := claim(ctx, tx, "proposals", c.UUID, c.Write, q)
		if err != nil || !applied {
			return err
		}
		if len(ap.Documents) > 0 {
			docs := ap.Documents
			for i := range docs {
				docs[i].ChangeID = c.ID
			}
			if _, err := tx.NewInsert().Model(&docs).Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Tasks) > 0 {
			tasks := ap.Tasks
			for i := range tasks {
				tasks[i].Version, tasks[i].ChangeID = 1, c.ID
			}
			if _, err := tx.NewInsert().Model(&tasks).Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Criteria) > 0 {
			acs := ap.Criteria
			if _, err := tx.NewInsert().Model(&acs).Exec(ctx); err != nil {
				return err
			}
		}
		if len(ap.Dependencies) > 0 {
			deps := ap.Dependencies
			if _, err := tx.NewInsert().Model(&deps).Exec(ctx); err != nil {
				return err
			}
			// The edges run between the new tasks (store/unresolved.go): no other write sees them yet.
			var from []string
			for _, d := range deps {
				from = append(from, d.TaskUUID)
			}
			if err := recount(ctx, tx, slices.Compact(slices.Sorted(slices.Values(from)))); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
}

// Named is an entity's uuid and title.
type Named struct {
	UUID  string `json:"uuid"`
	Title string `json:"title"`
}

// ClosedTask is a task a revoke closed and where its row now stands, for its workflow to adopt.
type ClosedTask struct {
	UUID    string `json:"uuid"`
	Title   string `json:"title"`
	Version int64  `json:"version"`
}

// Revoked lists what a revoke cascade closed and deleted.
type Revoked struct {
	ClosedTasks      []ClosedTask `json:"closedTasks"`
	DeletedDocuments []Named      `json:"deletedDocuments"`
}

// RevokeCascade applies docs/rules.md §5.7 in ONE transaction, as the proposal's change c: it closes every
// task of the proposal that is not closed (acceptance marks kept; each row moves one version on,
// marked with c's id, for its workflow to adopt), removes the dependency edges that other tasks
// have on them, deletes the proposal's documents and their comments, moves the proposal back to
// draft, and records the "revoked" activity with the counts and what was done. A retry of an
// applied revoke writes nothing and returns what the activity row recorded.
func (s *Store) RevokeCascade(ctx context.Context, c ProposalChange, reviewNote *string) (Revoked, error) {
	var out Revoked
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = Revoked{ClosedTasks: []ClosedTask{}, DeletedDocuments: []Named{}}
		var q *bun.UpdateQuery
		if row, cols := c.row(); len(cols) > 0 {
			q = tx.NewUpdate().Model(&row).ModelTableExpr("proposals").Column(cols...)
		}
		applied, err := claim(ctx, tx, "proposals", c.UUID, c.Write, q)
		if err != nil {
			return err
		}
		if !applied {
			return recordedRevoke(ctx, tx, c, &out)
		}
		return revokeRows(ctx, tx, c, reviewNote, &out)
	})
	return out, err
}

// revokeRows is the cascade of an applied revoke, after the proposal's own row: the project's
// lock, the proposal's tasks closed and their outside edges removed, its documents deleted, and
// the audit rows.
func revokeRows(ctx context.Context, tx bun.Tx, c ProposalChange, reviewNote *string, out *Revoked) error {
	// Closing tasks and removing edges changes counts of unresolved dependencies
	// (store/unresolved.go): the project's lock, after the proposal's row as in every write
	// on a proposal, before any task's.
	project, err := lockProposalProject(ctx, tx, c.UUID)
	if err != nil {
		return err
	}
	// Only the proposal's own project's rows (docs/rules.md §6.3, "Across projects").
	var tasks []Task
	if err := tx.NewSelect().Model(&tasks).Column("uuid", "title").Where("proposal_uuid = ?", c.UUID).
		Where("project_uuid = ?", project).Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
		return err
	}
	var docs []Document
	if err := tx.NewSelect().Model(&docs).Column("uuid", "title").Where("proposal_uuid = ?", c.UUID).
		Where("project_uuid = ?", project).Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
		return err
	}
	var ids []string
	for _, t := range tasks {
		ids = append(ids, t.UUID)
	}
	for _, d := range docs {
		out.DeletedDocuments = append(out.DeletedDocuments, Named{UUID: d.UUID, Title: d.Title})
	}
	// Every task depending on one of them is recounted at the end: those of the proposal,
	// whose dependencies close, and the others, whose edges to them are removed.
	affected, err := dependents(ctx, tx, ids)
	if err != nil {
		return err
	}
	if err := dropProjectEdgesTo(ctx, tx, project, ids); err != nil {
		return err
	}
	if out.ClosedTasks, err = closeRevokedTasks(ctx, tx, c, tasks); err != nil {
		return err
	}
	if err := recount(ctx, tx, affected); err != nil {
		return err
	}
	if err := deleteDocuments(ctx, tx, docs); err != nil {
		return err
	}
	return writeAudit(ctx, tx, c.CompanyUUID, revokedActivities(c, reviewNote, *out), c.Notifications)
}

// lockProposalProject reads the proposal's project and takes the project's lock.
func lockProposalProject(ctx context.Context, tx bun.Tx, proposalUUID string) (string, error) {
	var project []string
	if err := tx.NewSelect().Table("proposals").Column("project_uuid").Where("uuid = ?", proposalUUID).Scan(ctx, &project); err != nil {
		return "", err
	}
	if len(project) != 1 {
		return "", NotFound("Proposal")
	}
	return project[0], lockProject(ctx, tx, project[0])
}

// dropProjectEdgesTo removes the edges the project's other tasks have on ids; a task of another
// project keeps its edge, which a closed task resolves (docs/rules.md §5.7).
func dropProjectEdgesTo(ctx context.Context, tx bun.Tx, project string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.NewDelete().Table("task_dependencies").Where("depends_on_uuid IN (?)", bun.List(ids)).
		Where("task_uuid NOT IN (?)", bun.List(ids)).
		Where("task_uuid IN (SELECT uuid FROM tasks WHERE project_uuid = ?)", project).Exec(ctx)
	return err
}

// closeRevokedTasks closes each of tasks that is not closed yet and returns those it closed. Each
// row moves on from wherever its own workflow left it (the row lock orders the two writers); the
// version it reaches is what that workflow adopts.
func closeRevokedTasks(ctx context.Context, tx bun.Tx, c ProposalChange, tasks []Task) ([]ClosedTask, error) {
	closed := []ClosedTask{}
	for _, t := range tasks {
		var version []int64
		// A closed task's claim no longer lapses (docs/rules.md §5.10): its lease goes with it.
		if err := tx.NewUpdate().Table("tasks").Set("status = 'closed'").Set("version = version + 1").
			Set("claim_ttl_seconds = NULL").Set("claim_expires_at = NULL").
			Set("change_id = ?", c.ID).Set("updated_at = ?", c.At).Where("uuid = ?", t.UUID).Where("status <> 'closed'").
			Returning("version").Scan(ctx, &version); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if len(version) == 1 {
			closed = append(closed, ClosedTask{UUID: t.UUID, Title: t.Title, Version: version[0]})
			w := c.Write
			w.Expect = version[0] - 1
			if err := journal(ctx, tx, "tasks", t.UUID, w); err != nil {
				return nil, err
			}
		}
	}
	return closed, nil
}

// deleteDocuments deletes docs and their comments.
func deleteDocuments(ctx context.Context, tx bun.Tx, docs []Document) error {
	if len(docs) == 0 {
		return nil
	}
	var docIDs []string
	for _, d := range docs {
		docIDs = append(docIDs, d.UUID)
	}
	if _, err := tx.NewDelete().Table("comments").Where("target_type = 'document'").
		Where("target_uuid IN (?)", bun.List(docIDs)).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Table("documents").Where("uuid IN (?)", bun.List(docIDs)).Exec(ctx)
	return err
}

// revokedActivities is c's activities with what the revoke did recorded on its "revoked" row.
func revokedActivities(c ProposalChange, reviewNote *string, out Revoked) []Activity {
	acts := append([]Activity(nil), c.Activities...)
	for i := range acts {
		if acts[i].Action == "revoked" {
			acts[i].Value, _ = json.Marshal(map[string]any{"reviewNote": reviewNote,
				"closedTaskCount": len(out.ClosedTasks), "deletedDocumentCount": len(out.DeletedDocuments),
				"closedTasks": out.ClosedTasks, "deletedDocuments": out.DeletedDocuments})
		}
	}
	return acts
}

// recordedRevoke reads back what an applied revoke did, from its "revoked" activity row.
func recordedRevoke(ctx context.Context, tx bun.Tx, c ProposalChange, out *Revoked) error {
	for _, a := range c.Activities {
		if a.Action != "revoked" {
			continue
		}
		var row Activity
		if err := tx.NewSelect().Model(&row).Where("uuid = ?", a.UUID).Scan(ctx); err != nil {
			return err
		}
		var v Revoked
		if err := json.Unmarshal(row.Value, &v); err != nil {
			return err
		}
		if v.ClosedTasks != nil {
			out.ClosedTasks = v.ClosedTasks
		}
		if v.DeletedDocuments != nil {
			out.DeletedDocuments = v.DeletedDocuments
		}
	}
	return nil
}
