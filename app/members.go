package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
)

// Project members (docs/rules.md §6.3), one rule for agents and operators: a project's admins
// manage its members, an operator (the chorus project member commands) manages every project
// of its company whatever its roles, and nobody takes the last admin role away.

// Manager is who changes a project's members and settings, or a company's agents and keys: an
// agent acting with its owner's access (Caller), a person signed in to the console (Caller and
// Person), or an operator.
type Manager struct {
	Caller   store.Caller
	Operator bool
	// Person is the signed-in person when the caller is one (their company role decides over
	// agents and keys, docs/rules.md "People in the console"); nil for an agent or an operator.
	Person *store.User
}

// Agent is the manager a request's caller is: the agent, or the person.
func (r Request) Agent() Manager {
	m := Manager{Caller: r.Who.Caller}
	if r.Who.IsUser() {
		m.Person = r.Who.Owner
	}
	return m
}

// Operator is an operator of the company as a manager.
func Operator(companyUUID string) Manager {
	return Manager{Caller: store.Caller{CompanyUUID: companyUUID}, Operator: true}
}

// ProjectMembers lists the members of a project m can see, oldest first.
func (a *App) ProjectMembers(ctx context.Context, m Manager, projectUUID string) (*store.Project, []store.MemberListing, error) {
	var p *store.Project
	if m.Operator {
		var err error
		if p, err = a.Store.CompanyProject(ctx, m.Caller.CompanyUUID, projectUUID); err != nil {
			return nil, nil, err
		}
	} else {
		pv, err := a.Store.RequireProject(ctx, m.Caller, projectUUID, store.AccessNone)
		if err != nil {
			return nil, nil, err
		}
		p = &pv.Project
	}
	ms, err := a.Store.ListProjectMembers(ctx, p.UUID)
	return p, ms, err
}

// GroupMembers lists the members of a project group the caller can see, oldest first.
func (a *App) GroupMembers(ctx context.Context, r Request, groupUUID string) (*store.GroupView, []store.MemberListing, error) {
	g, err := a.Store.GetGroup(ctx, r.Who.Caller, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	ms, err := a.Store.ListGroupMembers(ctx, g.UUID)
	return g, ms, err
}

// GrantProjectRole gives a user of the company a role on a project, or changes the one it has,
// and reports whether anything changed.
func (a *App) GrantProjectRole(ctx context.Context, m Manager, projectUUID, userUUID, role string) (*store.Project, *store.User, bool, error) {
	if err := CheckRole(role); err != nil {
		return nil, nil, false, err
	}
	return a.changeProjectRole(ctx, m, projectUUID, userUUID, role)
}

// GrantProjectRoleByEmail is GrantProjectRole for a person named by e-mail (the console's add
// member form), checked in the order of docs/rules.md §3.4: the role, then the project and the
// right to manage its members ("Project not found", "Only project admins can manage this
// project"), and only then the e-mail ("email: no person of this company ..."), so a person who
// may not manage the project learns nothing of who belongs to the company.
func (a *App) GrantProjectRoleByEmail(ctx context.Context, m Manager, projectUUID, email, role string) (*store.Project, *store.User, bool, error) {
	if err := CheckRole(role); err != nil {
		return nil, nil, false, err
	}
	if !m.Operator {
		pv, err := a.Store.RequireProject(ctx, m.Caller, projectUUID, store.AccessNone)
		if err != nil {
			return nil, nil, false, err
		}
		if pv.Level() < store.AccessAdmin {
			return nil, nil, false, errProjectManage()
		}
	}
	u, err := a.CompanyUserByEmail(ctx, m, email)
	if err != nil {
		return nil, nil, false, err
	}
	return a.changeProjectRole(ctx, m, projectUUID, u.UUID, role)
}

// RevokeProjectRole takes a user's role on a project away, with GrantProjectRole's rights and
// guard, and reports whether it had one.
func (a *App) RevokeProjectRole(ctx context.Context, m Manager, projectUUID, userUUID string) (*store.Project, *store.User, bool, error) {
	return a.changeProjectRole(ctx, m, projectUUID, userUUID, "")
}

// changeProjectRole sets the user's role ("" removes it), checking in the order of
// docs/rules.md §3.4: the project and the right to manage it, the user, the guard.
func (a *App) changeProjectRole(ctx context.Context, m Manager, projectUUID, userUUID, role string) (*store.Project, *store.User, bool, error) {
	var (
		p       *store.Project
		u       *store.User
		changed bool
	)
	err := a.Store.InAccessTx(ctx, m.Caller, func(ctx context.Context, t *store.AccessTx) error {
		changed = false
		if err := t.LockProjectRow(ctx, projectUUID); err != nil {
			return err
		}
		var err error
		if p, err = managedProject(ctx, t, m, projectUUID); err != nil {
			return err
		}
		if u, err = t.CompanyUser(ctx, userUUID); err != nil {
			return err
		}
		f, err := t.ProjectMember(ctx, p.UUID, u.UUID)
		if err != nil || f.Role == role {
			return err
		}
		if err := keepAnAdmin(f, "project"); err != nil {
			return err
		}
		changed = true
		return t.SetProjectRole(ctx, *p, u.UUID, role)
	})
	if err != nil {
		return nil, nil, false, err
	}
	return p, u, changed, nil
}

// managedProject finds the project m may manage the members of: one it can see (else "Project
// not found") on which it is admin; an operator, any of the company's.
func managedProject(ctx context.Context, t *store.AccessTx, m Manager, projectUUID string) (*store.Project, error) {
	if m.Operator {
		return t.CompanyProject(ctx, projectUUID)
	}
	v, err := t.Project(ctx, projectUUID)
	if err != nil {
		return nil, err
	}
	if v.Level() < store.AccessAdmin {
		return nil, errProjectManage()
	}
	return &v.Project, nil
}
