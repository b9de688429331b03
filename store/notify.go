package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Recipient is a user or an agent that receives a notification.
type Recipient struct {
	Type string `json:"type"` // "user" or "agent"
	UUID string `json:"uuid"`
}

// NotifySpec is one notification (docs/rules.md §7.2) to be sent to several recipients.
type NotifySpec struct {
	// Seed makes the rows' uuids: uuid5(seed, recipient), so a retried write inserts nothing twice.
	Seed        string
	ProjectUUID string
	Action      string
	EntityType  string
	EntityUUID  string
	EntityTitle string
	Message     string
	ActorType   string
	ActorUUID   string
	ActorName   string
	Recipients  []Recipient
}

var notifyNS = uuid.MustParse("0c9a3a1e-7f55-4d2b-b0de-1d3f0f6c2a11")

// InsertNotifications writes spec's notifications in db (a transaction, usually): one per
// recipient, skipping empty and duplicate recipients, the actor itself, and recipients who
// cannot see the project (docs/rules.md §7.2: a notification must not reveal a private project), with
// the project name denormalised.
func InsertNotifications(ctx context.Context, db bun.IDB, companyUUID string, spec NotifySpec) error {
	var project Project
	if spec.ProjectUUID != "" {
		if err := db.NewSelect().Model(&project).Where("uuid = ?", spec.ProjectUUID).Scan(ctx); err != nil {
			return nil // the project is gone: nobody to tell
		}
	}
	var seen []Recipient
	for _, r := range spec.Recipients {
		if r.UUID == "" || (r.Type == spec.ActorType && r.UUID == spec.ActorUUID) || slices.Contains(seen, r) {
			continue
		}
		seen = append(seen, r)
		if project.Visibility == "private" {
			ok, err := canSee(ctx, db, r, project)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		now := Now()
		row := Notification{UUID: uuid.NewSHA1(notifyNS, []byte(spec.Seed+"/"+r.Type+"/"+r.UUID)).String(),
			CompanyUUID: companyUUID, RecipientType: r.Type, RecipientUUID: r.UUID, EntityType: spec.EntityType,
			EntityUUID: spec.EntityUUID, EntityTitle: spec.EntityTitle, ProjectName: project.Name, Action: spec.Action,
			Message: spec.Message, ActorType: spec.ActorType, ActorUUID: spec.ActorUUID, ActorName: spec.ActorName,
			CreatedAt: now, UpdatedAt: now}
		if spec.ProjectUUID != "" {
			row.ProjectUUID = &spec.ProjectUUID
		}
		if _, err := db.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert notification %s: %w", spec.Action, err)
		}
	}
	return nil
}

// OwnerOf returns the owner user of an agent as a recipient, or an empty recipient.
func OwnerOf(ctx context.Context, db bun.IDB, agentUUID string) Recipient {
	var owner *string
	_ = db.NewSelect().Table("agents").Column("owner_uuid").Where("uuid = ?", agentUUID).Scan(ctx, &owner)
	if owner == nil {
		return Recipient{}
	}
	return Recipient{Type: "user", UUID: *owner}
}

// canSee reports whether a recipient has a role on a private project, directly or through its
// group; an agent is judged by its owner user (docs/rules.md §6.3).
func canSee(ctx context.Context, db bun.IDB, r Recipient, p Project) (bool, error) {
	user := r.UUID
	if r.Type == "agent" {
		var owner *string
		if err := db.NewSelect().Table("agents").Column("owner_uuid").Where("uuid = ?", r.UUID).Scan(ctx, &owner); err != nil || owner == nil {
			return false, nil
		}
		user = *owner
	}
	n, err := db.NewSelect().Table("project_members").Where("project_uuid = ?", p.UUID).Where("user_uuid = ?", user).Count(ctx)
	if err != nil || n > 0 {
		return n > 0, err
	}
	if p.GroupUUID == nil {
		return false, nil
	}
	n, err = db.NewSelect().Table("project_group_members").Where("group_uuid = ?", *p.GroupUUID).Where("user_uuid = ?", user).Count(ctx)
	return n > 0, err
}
