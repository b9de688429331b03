package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Projects (docs/rules.md §4.2) and the check-in (§4.1): records and reads.

// Checkin is what chorus_checkin answers: the check-in itself (the agent, its owner, its
// notifications), the projects with ideas assigned to the caller, and its active sessions with
// their open check-ins.
type Checkin struct {
	*store.CheckinResult
	Active   []store.ActiveProject
	Sessions []store.AgentSession
	// Open maps a session's uuid to its open check-ins.
	Open map[string][]store.SessionCheckin
}

// CheckIn records the caller's check-in and returns what it sees; readOnly records nothing
// (the recent notifications stay unread).
func (a *App) CheckIn(ctx context.Context, r Request, readOnly bool, maxSessions int) (*Checkin, error) {
	checkin := a.Store.Checkin
	if readOnly {
		checkin = a.Store.CheckinReadOnly
	}
	res, err := checkin(ctx, r.Who.Caller)
	if err != nil {
		return nil, err
	}
	out := &Checkin{CheckinResult: res}
	if out.Active, err = a.Store.ActiveProjects(ctx, r.Who.Caller); err != nil {
		return nil, err
	}
	if out.Sessions, err = a.Store.ActiveSessions(ctx, r.Who.Caller, maxSessions); err != nil {
		return nil, err
	}
	ids := make([]string, len(out.Sessions))
	for i, ss := range out.Sessions {
		ids[i] = ss.UUID
	}
	if out.Open, err = a.Store.OpenCheckins(ctx, ids...); err != nil {
		return nil, err
	}
	return out, nil
}

// ListProjects returns one page of the projects the caller can see, most recently updated
// first, and their total.
func (a *App) ListProjects(ctx context.Context, r Request, limit, offset int) ([]store.ProjectView, int, error) {
	return a.Store.ListProjects(ctx, r.Who.Caller, limit, offset)
}

// GetProject returns a project the caller can see, with its counts.
func (a *App) GetProject(ctx context.Context, r Request, projectUUID string) (*store.ProjectView, error) {
	return a.Store.GetProject(ctx, r.Who.Caller, projectUUID)
}

// NewProject is a project to create.
type NewProject struct {
	Name        string
	Description *string
	// GroupUUID puts the project in a group the caller can see; a private group makes it
	// private.
	GroupUUID *string
	// Visibility is public or private; "" is public.
	Visibility string
	// ClaimTTLSeconds gives task claims a time to live (docs/rules.md §5.10); nil for none.
	ClaimTTLSeconds *int64
}

// CreateProject creates a project; the caller's owner becomes its admin. A retried call (same
// requestId) returns the project the first one made.
func (a *App) CreateProject(ctx context.Context, r Request, n NewProject) (*store.Project, error) {
	if err := workflows.CheckTitle("", "name", &n.Name); err != nil {
		return nil, err
	}
	if n.Visibility == "private" && r.Who.Caller.OwnerUUID == "" {
		return nil, Refuse(vocab.RefusedPrecondition, "An agent without an owner cannot create a private project: its members "+
			"are users, and no user would be one. Create it public, or give the agent an owner (chorus agent create --owner-email).")
	}
	return a.Store.CreateProject(ctx, r.Who.Caller, store.NewProject{UUID: r.NewID("project"), Name: n.Name,
		Description: n.Description, GroupUUID: n.GroupUUID, Visibility: n.Visibility, ClaimTTLSeconds: n.ClaimTTLSeconds})
}
