package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Mentionable is a user or agent chorus_search_mentionables offers (docs/rules.md §4.12).
type Mentionable struct {
	Type      string // "user" or "agent"
	UUID      string
	Name      string
	Email     *string
	AvatarURL *string
	// Agents only.
	Roles       []string
	Online      bool
	ActiveCount int
}

// OnlineWindow is how recently an agent must have been active to count as online.
const OnlineWindow = time.Hour

// Mentionables returns the users and agents the caller may mention whose name (or a user's
// email) contains query in any case: every user of the company, and the agents that share the
// caller's owner (none for an ownerless caller). With project set, only users who can see that
// project are offered (the agents act with the caller's own owner's access, which sees it).
// Agents carry online (active within OnlineWindow: a check-in, any call with one of its keys, or an
// active session's heartbeat)
// and activeCount (their assigned and in-progress tasks in projects the caller sees; 0 when
// offline). Order: online agents by activeCount then name, offline agents by name, users by name.
func (s *Store) Mentionables(ctx context.Context, c Caller, query string, project *ProjectView) ([]Mentionable, error) {
	needle := strings.ToLower(strings.TrimSpace(query))
	matches := func(fields ...*string) bool {
		for _, f := range fields {
			if f != nil && strings.Contains(strings.ToLower(*f), needle) {
				return true
			}
		}
		return false
	}
	var agents []Mentionable
	if c.OwnerUUID != "" {
		var rows []Agent
		err := s.DB.NewSelect().Model(&rows).Where("company_uuid = ?", c.CompanyUUID).Where("owner_uuid = ?", c.OwnerUUID).Scan(ctx)
		if err != nil {
			return nil, err
		}
		since := Now().Add(-OnlineWindow)
		for _, a := range rows {
			if !matches(&a.Name) {
				continue
			}
			online := a.LastActiveAt != nil && a.LastActiveAt.After(since)
			if !online {
				online, err = s.DB.NewSelect().Model((*APIKey)(nil)).Where("agent_uuid = ?", a.UUID).
					Where("last_used_at > ?", since).Exists(ctx)
				if err != nil {
					return nil, err
				}
			}
			if !online { // an active session with a recent heartbeat (docs/rules.md §2.5)
				online, err = s.DB.NewSelect().Model((*AgentSession)(nil)).Where("agent_uuid = ?", a.UUID).
					Where("status = 'active'").Where("last_active_at > ?", since).Exists(ctx)
				if err != nil {
					return nil, err
				}
			}
			m := Mentionable{Type: "agent", UUID: a.UUID, Name: a.Name, Roles: a.Roles, Online: online}
			if m.Roles == nil {
				m.Roles = []string{}
			}
			if online {
				n, err := s.DB.NewSelect().Model((*Task)(nil)).Where("assignee_type = 'agent'").Where("assignee_uuid = ?", a.UUID).
					Where("status IN (?)", bun.List([]vocab.TaskStatus{vocab.TaskAssigned, vocab.TaskInProgress})).
					Where("project_uuid IN (SELECT visible_uuid FROM (?) AS v)", s.projectRoles(c).ColumnExpr("project.uuid AS visible_uuid")).
					Count(ctx)
				if err != nil {
					return nil, err
				}
				m.ActiveCount = int(n)
			}
			agents = append(agents, m)
		}
	}
	slices.SortStableFunc(agents, func(a, b Mentionable) int {
		switch {
		case a.Online != b.Online:
			if a.Online {
				return -1
			}
			return 1
		case a.Online && a.ActiveCount != b.ActiveCount:
			return a.ActiveCount - b.ActiveCount
		}
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})

	var users []User
	q := s.DB.NewSelect().Model(&users).Where("?TableAlias.company_uuid = ?", c.CompanyUUID)
	if project != nil && project.Visibility != "public" {
		q = q.Where("(EXISTS (SELECT 1 FROM project_members AS pm WHERE pm.project_uuid = ? AND pm.user_uuid = ?TableAlias.uuid)"+
			" OR EXISTS (SELECT 1 FROM project_group_members AS gm WHERE gm.group_uuid = ? AND gm.user_uuid = ?TableAlias.uuid))",
			project.UUID, groupOrNone(project.GroupUUID))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	var people []Mentionable
	for _, u := range users {
		if !matches(u.Name, u.Email) {
			continue
		}
		people = append(people, Mentionable{Type: "user", UUID: u.UUID, Name: u.DisplayName(), Email: u.Email, AvatarURL: u.AvatarURL})
	}
	slices.SortStableFunc(people, func(a, b Mentionable) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return append(agents, people...), nil
}

// groupOrNone is a group uuid for a query, or one that matches no group.
func groupOrNone(g *string) string {
	if g == nil {
		return ""
	}
	return *g
}
