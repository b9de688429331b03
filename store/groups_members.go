package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// MemberAction adds, updates or removes one member.
type MemberAction struct {
	Action   string // add | update | remove
	UserUUID string
	Role     string
}

// applyMember applies one member action of UpdateGroup to g (the caller checked that it is the
// group's admin) and bumps g's access_version when a membership changed; an action that changes
// nothing (the same role, removing a user who is not a member) writes nothing. It refuses to take
// the group's last admin away.
func applyMember(ctx context.Context, tx bun.Tx, c Caller, g ProjectGroup, m MemberAction, now time.Time) error {
	if !IsUUID(m.UserUUID) {
		return NotFound("User")
	}
	exists, err := tx.NewSelect().Model((*User)(nil)).Where("uuid = ?", m.UserUUID).Where("company_uuid = ?", c.CompanyUUID).Exists(ctx)
	if err != nil {
		return err
	}
	if !exists {
		return NotFound("User")
	}
	var cur ProjectGroupMember
	err = tx.NewSelect().Model(&cur).Where("group_uuid = ?", g.UUID).Where("user_uuid = ?", m.UserUUID).Scan(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	switch m.Action {
	case "add", "update":
		if m.Action == "update" && !found {
			return NotFound("Project group member")
		}
		if found {
			if cur.Role == m.Role {
				return nil
			}
			if err := keepAGroupAdmin(ctx, tx, g.UUID, cur); err != nil {
				return err
			}
			_, err = tx.NewUpdate().Model(&cur).Set("role = ?", m.Role).Set("updated_at = ?", now).WherePK().Exec(ctx)
		} else {
			row := ProjectGroupMember{UUID: NewUUID(), CompanyUUID: c.CompanyUUID, GroupUUID: g.UUID, UserUUID: m.UserUUID,
				Role: m.Role, CreatedAt: now, UpdatedAt: now}
			if c.OwnerUUID != "" {
				row.AddedByUUID = &c.OwnerUUID
			}
			_, err = tx.NewInsert().Model(&row).Exec(ctx)
		}
	case "remove":
		if !found {
			return nil
		}
		if err := keepAGroupAdmin(ctx, tx, g.UUID, cur); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model(&cur).WherePK().Exec(ctx)
	default:
		return fmt.Errorf("unknown member action %q", m.Action)
	}
	if err != nil {
		return err
	}
	_, err = tx.NewUpdate().Table("project_groups").Set("access_version = access_version + 1").Set("updated_at = ?", now).
		Where("uuid = ?", g.UUID).Exec(ctx)
	return err
}

// keepAGroupAdmin refuses to take the admin role of cur away when it is the group's last one.
func keepAGroupAdmin(ctx context.Context, tx bun.Tx, groupUUID string, cur ProjectGroupMember) error {
	if cur.Role != "admin" {
		return nil
	}
	n, err := tx.NewSelect().Model((*ProjectGroupMember)(nil)).Where("group_uuid = ?", groupUUID).Where("role = 'admin'").Count(ctx)
	if err != nil || n > 1 {
		return err
	}
	return errLastAdmin("project group")
}
