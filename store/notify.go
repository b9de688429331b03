package store

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// CoalesceWindow is how close together two conversation notifications (comment_added,
// mentioned) from one actor to one recipient about one entity must come to be merged into one
// (docs/rules.md §7.2).
const CoalesceWindow = 10 * time.Minute

// coalesced are the actions that merge: the ones an actor can repeat at will by writing text.
var coalesced = []string{"comment_added", "mentioned"}

// InsertNotifications writes spec's notifications in db (a transaction, usually): one per
// recipient, skipping empty and duplicate recipients, the actor itself, and recipients who
// cannot see the project (docs/rules.md §7.2: a notification must not reveal a private project), with
// the project name denormalised. A comment_added or mentioned notification is merged into the
// recipient's unread one of those actions from the same actor about the same entity, when that
// one is at most CoalesceWindow old (coalesce), so a flood of comments or mentions leaves one.
// It also writes the notification's event for the recipients told, merged ones included
// (docs/rules.md §7.4), even when none is left: webhooks carry a project's events to nobody in
// particular.
func InsertNotifications(ctx context.Context, db bun.IDB, companyUUID string, spec NotifySpec) error {
	var project Project
	if spec.ProjectUUID != "" {
		if err := db.NewSelect().Model(&project).Where("uuid = ?", spec.ProjectUUID).Scan(ctx); err != nil {
			return nil // the project is gone: nobody to tell
		}
	}
	var seen, told []Recipient
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
		told = append(told, r)
		now := Now()
		if slices.Contains(coalesced, spec.Action) {
			merged, err := coalesce(ctx, db, r, spec, now)
			if err != nil {
				return err
			}
			if merged {
				continue
			}
		}
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
	return insertEvent(ctx, db, companyUUID, spec, told, Now())
}

// coalesce merges spec's notification for r into r's unread conversation notification from
// the same actor about the same entity written within CoalesceWindow, if there is one, and
// reports whether it did. The merged one takes the new message and time (it moves to the top
// of the inbox and its window starts again), except that a mention is never replaced by a plain
// comment_added: that keeps the mention's message and action and takes the time only.
// On PostgreSQL, writers for one (recipient, actor, entity) take turns (a transaction-scoped
// advisory lock), so concurrent comments cannot each miss the others' row; SQLite's write
// transactions already do.
func coalesce(ctx context.Context, db bun.IDB, r Recipient, spec NotifySpec, now time.Time) (bool, error) {
	if db.Dialect().Name().String() == "pg" {
		lock := "notify/" + r.Type + "/" + r.UUID + "/" + spec.ActorType + "/" + spec.ActorUUID + "/" + spec.EntityUUID
		if _, err := db.NewRaw("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", lock).Exec(ctx); err != nil {
			return false, fmt.Errorf("lock notifications: %w", err)
		}
	}
	var prev []Notification
	err := db.NewSelect().Model(&prev).Column("uuid", "action").
		Where("recipient_type = ?", r.Type).Where("recipient_uuid = ?", r.UUID).
		Where("read_at IS NULL").Where("archived_at IS NULL").Where("created_at >= ?", now.Add(-CoalesceWindow)).
		Where("actor_type = ?", spec.ActorType).Where("actor_uuid = ?", spec.ActorUUID).
		Where("entity_type = ?", spec.EntityType).Where("entity_uuid = ?", spec.EntityUUID).
		Where("action IN (?)", bun.List(coalesced)).
		Order("created_at DESC").Limit(1).Scan(ctx)
	if err != nil || len(prev) == 0 {
		return false, err
	}
	q := db.NewUpdate().Model((*Notification)(nil)).Where("uuid = ?", prev[0].UUID).
		Set("created_at = ?", now).Set("updated_at = ?", now).Set("entity_title = ?", spec.EntityTitle).
		Set("actor_name = ?", spec.ActorName)
	if !(prev[0].Action == "mentioned" && spec.Action != "mentioned") {
		q = q.Set("action = ?", spec.Action).Set("message = ?", spec.Message)
	}
	if _, err := q.Exec(ctx); err != nil {
		return false, fmt.Errorf("merge notification %s: %w", spec.Action, err)
	}
	return true, nil
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
