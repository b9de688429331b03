package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// CheckinResult is what chorus_checkin reports about the caller, before shaping (docs/rules.md §4.1).
type CheckinResult struct {
	At     time.Time
	Agent  Agent
	Owner  *User
	Recent []Notification // up to 5 unread, newest first; now marked read
	Unread int            // unread left after marking
}

// recentOnCheckin is how many unread notifications a check-in returns and marks read.
const recentOnCheckin = 5

// Checkin records that the agent is active (lastActiveAt = now), takes up to five of its unread
// notifications (newest first) and marks them read, and counts the unread ones left, all among
// those of projects it can see (callerInbox). The
// first check-in of an agent that has an owner leaves the owner an "agent_checkin"
// notification. All of it happens in one transaction.
func (s *Store) Checkin(ctx context.Context, c Caller) (*CheckinResult, error) {
	return s.checkin(ctx, c, true)
}

// CheckinReadOnly is Checkin for a read-only connection (docs/rules.md §3.3): it reads the same
// and writes nothing; the notifications it returns stay unread and count in Unread.
func (s *Store) CheckinReadOnly(ctx context.Context, c Caller) (*CheckinResult, error) {
	return s.checkin(ctx, c, false)
}

func (s *Store) checkin(ctx context.Context, c Caller, write bool) (*CheckinResult, error) {
	res := CheckinResult{At: Now()}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(&res.Agent).Where("uuid = ?", c.AgentUUID).Scan(ctx); err != nil {
			return mapErr(err, "Agent")
		}
		if write {
			res.Agent.LastActiveAt = &res.At
			if _, err := tx.NewUpdate().Model(&res.Agent).Column("last_active_at").WherePK().Exec(ctx); err != nil {
				return err
			}
		}
		if res.Agent.OwnerUUID != nil {
			var u User
			if err := tx.NewSelect().Model(&u).Where("uuid = ?", *res.Agent.OwnerUUID).Scan(ctx); err == nil {
				res.Owner = &u
			}
		}
		if write && res.Owner != nil {
			// One per agent, ever: its id derives from the agent, so only the first check-in's
			// insert lands (also when two race on PostgreSQL); any call, not only a check-in,
			// moves lastActiveAt, so that cannot tell the first check-in.
			n := Notification{UUID: derivedID("agent_checkin", res.Agent.UUID), CompanyUUID: c.CompanyUUID, RecipientType: "user",
				RecipientUUID: res.Owner.UUID, EntityType: "agent", EntityUUID: res.Agent.UUID,
				EntityTitle: res.Agent.Name, Action: "agent_checkin",
				Message:   res.Agent.Name + " checked in for the first time",
				ActorType: "agent", ActorUUID: res.Agent.UUID, ActorName: res.Agent.Name,
				CreatedAt: res.At, UpdatedAt: res.At}
			if _, err := tx.NewInsert().Model(&n).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		err := s.callerInbox(tx, &res.Recent, c).Where("read_at IS NULL").
			Order("created_at DESC", "uuid DESC").Limit(recentOnCheckin).Scan(ctx)
		if err != nil {
			return err
		}
		if write && len(res.Recent) > 0 {
			ids := make([]string, len(res.Recent))
			for i := range res.Recent {
				ids[i] = res.Recent[i].UUID
				res.Recent[i].ReadAt = &res.At
			}
			_, err := tx.NewUpdate().Model((*Notification)(nil)).
				Set("read_at = ?", res.At).Set("updated_at = ?", res.At).
				Where("uuid IN (?)", bun.List(ids)).Exec(ctx)
			if err != nil {
				return err
			}
		}
		unread, err := s.callerInbox(tx, (*Notification)(nil), c).Where("read_at IS NULL").Count(ctx)
		res.Unread = int(unread)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}
