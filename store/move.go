package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// Moving an idea to another project (docs/rules.md §5.9): the idea's workflow writes the whole
// cascade in one transaction, then tells the workflow of every other lifecycle row it moved
// (docs/write-path.md, "Who writes what").

// IdeaMove is one chorus_move_idea: the root idea's change and the projects.
type IdeaMove struct {
	Write
	UUID        string
	CompanyUUID string
	FromProject string
	ToProject   string
	// Activity is the "moved" activity (in the target project); the cascade fills its value.
	Activity Activity
}

// MoveCounts are the rows a move updated, per kind (docs/rules.md §5.9).
type MoveCounts struct {
	Ideas      int `json:"ideas"`
	Proposals  int `json:"proposals"`
	Documents  int `json:"documents"`
	Tasks      int `json:"tasks"`
	Activities int `json:"activities"`
}

// MovedRow is a lifecycle row a move moved besides the root idea: where it now stands, for its
// workflow to adopt.
type MovedRow struct {
	Table    string `json:"table"`
	UUID     string `json:"uuid"`
	Version  int64  `json:"version"`
	ChangeID string `json:"changeId"`
	Status   string `json:"status"`
}

// MoveOutcome is what a move did. A retry of an applied move reports the same.
type MoveOutcome struct {
	Counts   MoveCounts
	FromName string
	ToName   string
	Rows     []MovedRow
}

// movedValue is the "moved" activity's value (docs/rules.md §7.1).
type movedValue struct {
	FromProjectUUID string     `json:"fromProjectUuid"`
	FromProjectName string     `json:"fromProjectName"`
	ToProjectUUID   string     `json:"toProjectUuid"`
	ToProjectName   string     `json:"toProjectName"`
	Moved           MoveCounts `json:"moved"`
}

// MoveIdeaCascade moves the idea, its descendants, the idea-input proposals of the source project
// that list any of them, those proposals' documents and tasks, and the source project's
// activities about all of these to m.ToProject, in one transaction (docs/rules.md §5.9). Nothing
// of another project moves or is counted, whoever asks (§6.3, "Across projects"). The root idea's row moves by the
// write protocol (from m.Expect) and loses its parent; every other idea, proposal and task row
// moves on from wherever it stands, marked with the move's change id and journaled, so its
// workflow adopts it (MoveOutcome.Rows) and a retry of the move writes nothing.
func (s *Store) MoveIdeaCascade(ctx context.Context, m IdeaMove) (MoveOutcome, error) {
	var out MoveOutcome
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = MoveOutcome{}
		for _, p := range slices.Sorted(slices.Values([]string{m.FromProject, m.ToProject})) {
			if err := lockProject(ctx, tx, p); err != nil {
				return err
			}
		}
		if done, err := appliedBefore(ctx, tx, "ideas", m.UUID, m.Write); err != nil {
			return err
		} else if done {
			return recordedMove(ctx, tx, m, &out)
		}
		if err := moveProjectNames(ctx, tx, m, &out); err != nil {
			return err
		}
		ideas, err := descendants(ctx, tx, m.UUID, m.FromProject)
		if err != nil {
			return err
		}
		// The root: by the write protocol, detached from its parent.
		q := tx.NewUpdate().Table("ideas").Set("project_uuid = ?", m.ToProject).Set("parent_uuid = NULL")
		applied, err := claim(ctx, tx, "ideas", m.UUID, m.Write, q)
		if err != nil || !applied {
			return err
		}
		return moveRest(ctx, tx, m, ideas, &out)
	})
	return out, err
}

// moveProjectNames sets out's project names; a target project not in m's company is not found.
func moveProjectNames(ctx context.Context, tx bun.Tx, m IdeaMove, out *MoveOutcome) error {
	var names []Project
	if err := tx.NewSelect().Model(&names).Column("uuid", "name").Where("company_uuid = ?", m.CompanyUUID).
		Where("uuid IN (?)", bun.List([]string{m.FromProject, m.ToProject})).Scan(ctx); err != nil {
		return err
	}
	for _, p := range names {
		if p.UUID == m.FromProject {
			out.FromName = p.Name
		}
		if p.UUID == m.ToProject {
			out.ToName = p.Name
		}
	}
	if !slices.ContainsFunc(names, func(p Project) bool { return p.UUID == m.ToProject }) {
		return NotFound("Target project")
	}
	return nil
}

// moveRest moves everything the root idea takes with it (its descendant ideas, their proposals,
// those proposals' tasks and documents, and the activities about all of them) and writes the
// "moved" activity.
func moveRest(ctx context.Context, tx bun.Tx, m IdeaMove, ideas []string, out *MoveOutcome) error {
	moved := map[string]bool{m.UUID: true}
	for _, id := range ideas {
		moved[id] = true
	}
	proposals, err := movedProposals(ctx, tx, m, moved)
	if err != nil {
		return err
	}
	var tasks, docs []string
	if len(proposals) > 0 {
		if err := tx.NewSelect().Table("tasks").Column("uuid").Where("proposal_uuid IN (?)", bun.List(proposals)).
			Where("project_uuid = ?", m.FromProject).Order("uuid").Scan(ctx, &tasks); err != nil {
			return err
		}
		if err := tx.NewSelect().Table("documents").Column("uuid").Where("proposal_uuid IN (?)", bun.List(proposals)).
			Where("project_uuid = ?", m.FromProject).Order("uuid").Scan(ctx, &docs); err != nil {
			return err
		}
	}
	out.Counts = MoveCounts{Ideas: 1 + len(ideas), Proposals: len(proposals), Documents: len(docs), Tasks: len(tasks)}
	if out.Rows, err = moveLifecycleRows(ctx, tx, m, ideas, proposals, tasks); err != nil {
		return err
	}
	if len(docs) > 0 {
		if _, err := tx.NewUpdate().Table("documents").Set("project_uuid = ?", m.ToProject).Where("uuid IN (?)", bun.List(docs)).
			Exec(ctx); err != nil {
			return err
		}
	}
	var targets []string
	for id := range moved {
		targets = append(targets, id)
	}
	targets = append(append(append(targets, proposals...), tasks...), docs...)
	res, err := tx.NewUpdate().Table("activities").Set("project_uuid = ?", m.ToProject).
		Where("company_uuid = ?", m.CompanyUUID).Where("project_uuid = ?", m.FromProject).Where("target_uuid IN (?)", bun.List(targets)).
		Where("target_type IN ('idea', 'proposal', 'task', 'document')").Exec(ctx)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	out.Counts.Activities = int(n)
	act := m.Activity
	act.ProjectUUID = m.ToProject
	act.Value, err = json.Marshal(movedValue{FromProjectUUID: m.FromProject, FromProjectName: out.FromName,
		ToProjectUUID: m.ToProject, ToProjectName: out.ToName, Moved: out.Counts})
	if err != nil {
		return err
	}
	return writeAudit(ctx, tx, m.CompanyUUID, []Activity{act}, nil)
}

// movedProposals lists, sorted, the source project's idea-input proposals that list a moved idea.
// A proposal in another project stays there, whoever may see it (docs/rules.md §6.3, "Across
// projects").
func movedProposals(ctx context.Context, tx bun.Tx, m IdeaMove, moved map[string]bool) ([]string, error) {
	var props []Proposal
	if err := tx.NewSelect().Model(&props).Column("uuid", "input_uuids").Where("company_uuid = ?", m.CompanyUUID).
		Where("project_uuid = ?", m.FromProject).Where("input_type = 'idea'").Scan(ctx); err != nil {
		return nil, err
	}
	var proposals []string
	for _, p := range props {
		if slices.ContainsFunc(p.InputUUIDs, func(u string) bool { return moved[strings.ToLower(u)] }) {
			proposals = append(proposals, p.UUID)
		}
	}
	slices.Sort(proposals)
	return proposals, nil
}

// moveLifecycleRows moves each idea, proposal and task row (not the root) one version on, marked
// with the move's change id and journaled, and returns where each now stands.
func moveLifecycleRows(ctx context.Context, tx bun.Tx, m IdeaMove, ideas, proposals, tasks []string) ([]MovedRow, error) {
	var rows []MovedRow
	for _, group := range []struct {
		table string
		uuids []string
	}{{"ideas", ideas}, {"proposals", proposals}, {"tasks", tasks}} {
		for _, id := range group.uuids {
			var row struct {
				Version int64  `bun:"version"`
				Status  string `bun:"status"`
			}
			if err := tx.NewUpdate().Table(group.table).Set("project_uuid = ?", m.ToProject).Set("version = version + 1").
				Set("change_id = ?", m.ID).Set("updated_at = ?", m.At).Where("uuid = ?", id).
				Returning("version, status").Scan(ctx, &row); err != nil {
				return nil, err
			}
			if err := journal(ctx, tx, group.table, id, Write{ID: m.ID, Update: m.Update, UpdateID: m.UpdateID, Expect: row.Version - 1, At: m.At}); err != nil {
				return nil, err
			}
			rows = append(rows, MovedRow{Table: group.table, UUID: id, Version: row.Version, ChangeID: m.ID, Status: row.Status})
		}
	}
	return rows, nil
}

// descendants lists the idea's transitive children in project (breadth first), never the idea
// itself. Lineage stays within a project (docs/rules.md §5.5); the project bounds the walk all the same.
func descendants(ctx context.Context, db bun.IDB, ideaUUID, project string) ([]string, error) {
	var out []string
	seen := map[string]bool{ideaUUID: true}
	level := []string{ideaUUID}
	for len(level) > 0 {
		var next []string
		if err := db.NewSelect().Table("ideas").Column("uuid").Where("parent_uuid IN (?)", bun.List(level)).
			Where("project_uuid = ?", project).Order("uuid").Scan(ctx, &next); err != nil {
			return nil, err
		}
		level = level[:0]
		for _, id := range next {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
				level = append(level, id)
			}
		}
	}
	return out, nil
}

// recordedMove reads back what an applied move did: its counts from its "moved" activity and
// the rows it moved from the change journal.
func recordedMove(ctx context.Context, tx bun.Tx, m IdeaMove, out *MoveOutcome) error {
	var act Activity
	if err := tx.NewSelect().Model(&act).Where("uuid = ?", m.Activity.UUID).Scan(ctx); err != nil {
		return fmt.Errorf("the move was applied but its activity is gone: %w", err)
	}
	var v movedValue
	if err := json.Unmarshal(act.Value, &v); err != nil {
		return err
	}
	out.Counts, out.FromName, out.ToName = v.Moved, v.FromProjectName, v.ToProjectName
	var rows []ChangeJournal
	if err := tx.NewSelect().Model(&rows).Where("change_id = ?", m.ID).Where("entity_uuid <> ?", m.UUID).
		Order("entity_table", "entity_uuid").Scan(ctx); err != nil {
		return err
	}
	for _, r := range rows {
		mr := MovedRow{Table: r.EntityTable, UUID: r.EntityUUID, Version: r.Version, ChangeID: m.ID}
		// The status matters only while the row is where the move left it (a task its proposal's
		// revoke had closed); a row moved on since was adopted by its workflow already.
		if cur, err := rowMark(ctx, tx, r.EntityTable, r.EntityUUID); err == nil && cur.Version == r.Version {
			mr.Status = cur.Status
		}
		out.Rows = append(out.Rows, mr)
	}
	return nil
}
