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

// NotifySpec is one notification (SPEC 6.2) to be sent to several recipients.
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
// recipient, skipping empty and duplicate recipients and the actor itself (SPEC 6.2), with the
// project name denormalised.
func InsertNotifications(ctx context.Context, db bun.IDB, companyUUID string, spec NotifySpec) error {
	var projectName string
	if spec.ProjectUUID != "" {
		_ = db.NewSelect().Table("projects").Column("name").Where("uuid = ?", spec.ProjectUUID).Scan(ctx, &projectName)
	}
	var seen []Recipient
	for _, r := range spec.Recipients {
		if r.UUID == "" || (r.Type == spec.ActorType && r.UUID == spec.ActorUUID) || slices.Contains(seen, r) {
			continue
		}
		seen = append(seen, r)
		now := Now()
		row := Notification{UUID: uuid.NewSHA1(notifyNS, []byte(spec.Seed+"/"+r.Type+"/"+r.UUID)).String(),
			CompanyUUID: companyUUID, RecipientType: r.Type, RecipientUUID: r.UUID, EntityType: spec.EntityType,
			EntityUUID: spec.EntityUUID, EntityTitle: spec.EntityTitle, ProjectName: projectName, Action: spec.Action,
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
