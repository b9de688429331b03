package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// Comments are records (docs/rules.md §4.15): plain transactions, no workflow. A comment is
// written with its "comment_added" activity, its notifications and its mentions in one
// transaction, all with ids derived from the comment's, so a retried write inserts nothing twice.

// Entity is an entity comments and activities can be about, with what notifications need.
type Entity struct {
	Type        string // idea, proposal, task or document
	UUID        string
	Title       string
	ProjectUUID string
	ProjectName string
	Creator     Recipient
	Assignee    Recipient // empty when nobody holds it (and always for proposals and documents)
}

// EntityName is the name a target type's refusals use ("Task not found").
func EntityName(typ string) string {
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

// EntityAccess is the project-access gate (docs/rules.md §6.3) for an entity named by type and
// uuid: a missing or hidden one is "<Entity> not found", a visible one below need ErrForbidden.
func (s *Store) EntityAccess(ctx context.Context, c Caller, typ, uuid string, need Access) (*Entity, *ProjectView, error) {
	assignee := func(typ, uuid *string) Recipient {
		if typ == nil || uuid == nil {
			return Recipient{}
		}
		t := *typ
		if t == "agent_instance" {
			t = "agent"
		}
		return Recipient{Type: t, UUID: *uuid}
	}
	var t Entity
	var pv *ProjectView
	switch typ {
	case "idea":
		i, p, err := s.IdeaAccess(ctx, c, uuid, need)
		if err != nil {
			return nil, nil, err
		}
		pv = p
		t = Entity{Title: i.Title, ProjectUUID: i.ProjectUUID, Creator: Recipient{Type: i.CreatedByType, UUID: i.CreatedByUUID},
			Assignee: assignee(i.AssigneeType, i.AssigneeUUID)}
	case "proposal":
		x, p, err := s.ProposalAccess(ctx, c, uuid, need)
		if err != nil {
			return nil, nil, err
		}
		pv = p
		t = Entity{Title: x.Title, ProjectUUID: x.ProjectUUID, Creator: Recipient{Type: x.CreatedByType, UUID: x.CreatedByUUID}}
	case "task":
		x, p, err := s.TaskAccess(ctx, c, uuid, need)
		if err != nil {
			return nil, nil, err
		}
		pv = p
		t = Entity{Title: x.Title, ProjectUUID: x.ProjectUUID, Creator: Recipient{Type: x.CreatedByType, UUID: x.CreatedByUUID},
			Assignee: assignee(x.AssigneeType, x.AssigneeUUID)}
	case "document":
		x, p, err := s.DocumentAccess(ctx, c, uuid, need)
		if err != nil {
			return nil, nil, err
		}
		pv = p
		t = Entity{Title: x.Title, ProjectUUID: x.ProjectUUID, Creator: Recipient{Type: x.CreatedByType, UUID: x.CreatedByUUID}}
	default:
		return nil, nil, NotFound(EntityName(typ))
	}
	t.Type, t.UUID, t.ProjectName = typ, uuid, pv.Name
	return &t, pv, nil
}

// NewComment is one chorus_add_comment call.
type NewComment struct {
	// UUID is the comment's id: derived from the requestId when the call has one, so a retry
	// finds the comment its first attempt wrote.
	UUID    string
	Target  Entity
	Content string
	Caller  Caller
}

// AddComment writes a comment by the caller on t, with, in the same transaction, the
// "comment_added" activity on the target, a "comment_added" notification to the people the
// target concerns (docs/rules.md §7.2) and the comment's mentions (§7.3). A comment whose uuid
// exists already (a retry of a committed call) is returned as it is, and nothing is written.
func (s *Store) AddComment(ctx context.Context, n NewComment) (*Comment, error) {
	var out Comment
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := Now()
		out = Comment{UUID: n.UUID, CompanyUUID: n.Caller.CompanyUUID, TargetType: n.Target.Type, TargetUUID: n.Target.UUID,
			Content: n.Content, AuthorType: n.Caller.Kind(), AuthorUUID: n.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now}
		res, err := tx.NewInsert().Model(&out).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			// Written by an earlier attempt, with everything that goes with it.
			if err := tx.NewSelect().Model(&out).Where("uuid = ?", n.UUID).Scan(ctx); err != nil {
				return err
			}
			if out.AuthorUUID != n.Caller.AgentUUID || out.TargetUUID != n.Target.UUID {
				return fmt.Errorf("comment %s exists with another author or target: %w", n.UUID, ErrConflict)
			}
			return nil
		}
		t := n.Target
		act := Activity{UUID: derivedID(out.UUID, "activity"), CompanyUUID: out.CompanyUUID, ProjectUUID: t.ProjectUUID,
			TargetType: t.Type, TargetUUID: t.UUID, ActorType: n.Caller.Kind(), ActorUUID: n.Caller.AgentUUID, Action: "comment_added",
			Value: jsonValue(map[string]string{"commentUuid": out.UUID}), CreatedAt: now}
		note := NotifySpec{Seed: out.UUID + "/comment_added", ProjectUUID: t.ProjectUUID, Action: "comment_added",
			EntityType: t.Type, EntityUUID: t.UUID, EntityTitle: t.Title,
			Message:   fmt.Sprintf("%s commented on %q", n.Caller.AgentName, t.Title),
			ActorType: n.Caller.Kind(), ActorUUID: n.Caller.AgentUUID, ActorName: n.Caller.AgentName,
			Recipients: []Recipient{t.Assignee, t.Creator}}
		if err := writeAudit(ctx, tx, out.CompanyUUID, []Activity{act}, []NotifySpec{note}); err != nil {
			return err
		}
		return writeMentions(ctx, tx, out.CompanyUUID, &MentionText{Seed: out.UUID, Text: out.Content,
			SourceType: "comment", SourceUUID: out.UUID, TargetType: t.Type, TargetUUID: t.UUID, TargetTitle: t.Title,
			ProjectUUID: t.ProjectUUID, ActorType: n.Caller.Kind(), ActorUUID: n.Caller.AgentUUID, ActorName: n.Caller.AgentName, At: now})
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListComments returns a page of the comments on a target, newest first, and their count.
func (s *Store) ListComments(ctx context.Context, companyUUID, targetType, targetUUID string, limit, offset int) ([]Comment, int, error) {
	var rows []Comment
	total, err := s.DB.NewSelect().Model(&rows).Where("company_uuid = ?", companyUUID).
		Where("target_type = ?", targetType).Where("target_uuid = ?", targetUUID).
		Order("created_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(total), err
}

// ignoreNoRows turns "no rows" into no error.
func ignoreNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
