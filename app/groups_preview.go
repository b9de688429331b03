package app

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/store"
)

// visibilityPreview says what changing g's visibility to to does, with the token over g's
// access and each of its projects'.
func visibilityPreview(ctx context.Context, t *store.AccessTx, c store.Caller, g store.ProjectGroup, to string) (*VisibilityPreview, error) {
	var facts store.AccessFacts
	if err := t.GroupAccess(ctx, &facts, g.UUID); err != nil {
		return nil, err
	}
	projects, err := t.GroupProjects(ctx, g.UUID)
	if err != nil {
		return nil, err
	}
	p := &VisibilityPreview{GroupUUID: g.UUID, FromVisibility: g.Visibility, Visibility: to, CompanyAccess: "unchanged",
		Projects: []ProjectImpact{}}
	switch {
	case g.Visibility == "public" && to == "private":
		p.CompanyAccess = "closed"
	case g.Visibility == "private" && to == "public":
		p.CompanyAccess = "opened"
	}
	madePrivate := 0
	for _, pr := range projects {
		if err := t.ProjectAccess(ctx, &facts, pr); err != nil {
			return nil, err
		}
		after := visibilityIn(to, pr.Visibility)
		if after != pr.Visibility {
			madePrivate++
		}
		p.Projects = append(p.Projects, ProjectImpact{UUID: pr.UUID, Name: pr.Name, FromVisibility: pr.Visibility, Visibility: after})
	}
	switch p.CompanyAccess {
	case "closed":
		p.Summary = fmt.Sprintf("The group becomes private: only its members will see it, and %d of its %d project(s) "+
			"become private too (members of the group or of each project keep their access).", madePrivate, len(projects))
	case "opened":
		p.Summary = fmt.Sprintf("The group becomes public: everyone in the company will see it and may edit it. Its %d "+
			"project(s) keep their own visibility.", len(projects))
	}
	p.Token = confirmToken(facts, "group-visibility", c, g.UUID, g.Visibility, to)
	return p, nil
}
