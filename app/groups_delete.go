package app

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/store"
)

// GroupDeletion is a group to delete: a preview, or the deletion it showed.
type GroupDeletion struct {
	GroupUUID string
	// DeleteProjects deletes the group's projects too; without it they stay, ungrouped.
	DeleteProjects bool
	Preview        bool
	Token          string
}

// DeletionPreview is what deleting a group does (docs/rules.md §4.11): each of its projects with
// what happens to it, the members whose role goes, and the token that applies this very deletion.
type DeletionPreview struct {
	GroupUUID      string
	Name           string
	DeleteProjects bool
	Projects       []ProjectDeletion
	Members        int
	Summary        string
	Token          string
}

// ProjectDeletion is one project of a group being deleted: its Action is "deleted" (with its
// documents, their comments and its activities) or "ungrouped".
type ProjectDeletion struct {
	UUID       string
	Name       string
	Visibility string
	Action     string
	Documents  int
}

// DeleteGroup deletes a group, or previews it (docs/rules.md §4.11, §6.5). It is destructive
// and changes access, so the caller needs an explicit admin role on the group (a public group's
// editor floor is not enough) and admin on every project it deletes, and applying needs the
// token of a preview made on the same state: the group's access, each project's access and, when
// its projects are deleted, every document they hold (so one added since makes the token
// stale). Deleting the projects is refused while they hold ideas, proposals or tasks (their
// workflows would outlive their rows). It returns the preview, or what was done (no token).
func (a *App) DeleteGroup(ctx context.Context, r Request, d GroupDeletion) (*DeletionPreview, error) {
	var out *DeletionPreview
	err := a.Store.InAccessTx(ctx, r.Who.Caller, func(ctx context.Context, t *store.AccessTx) error {
		out = nil
		v, err := t.LockGroup(ctx, d.GroupUUID)
		if err != nil {
			return err
		}
		if !v.IsAdmin() {
			return errGroupManage()
		}
		all, err := t.GroupProjects(ctx, d.GroupUUID)
		if err != nil {
			return err
		}
		if err := mayDeleteProjects(ctx, t, d, len(all)); err != nil {
			return err
		}
		ids := make([]string, len(all))
		for i, p := range all {
			ids[i] = p.UUID
		}
		if d.DeleteProjects {
			work, err := t.Work(ctx, ids)
			if err != nil {
				return err
			}
			if work.Ideas+work.Proposals+work.Tasks > 0 {
				return errGroupHasWork(work)
			}
		}
		p, err := deletionPreview(ctx, t, r.Who.Caller, v.ProjectGroup, all, d.DeleteProjects)
		if err != nil {
			return err
		}
		out = p
		if d.Preview {
			return nil
		}
		if err := checkToken(d.Token, p.Token); err != nil {
			return err
		}
		p.Token = ""
		return t.DeleteGroup(ctx, d.GroupUUID, ids, d.DeleteProjects)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mayDeleteProjects refuses a deletion by a caller who cannot see each of the group's projects
// (there are total), or, when they are deleted, is not admin of each.
func mayDeleteProjects(ctx context.Context, t *store.AccessTx, d GroupDeletion, total int) error {
	seen, err := t.VisibleGroupProjects(ctx, d.GroupUUID)
	if err != nil {
		return err
	}
	if len(seen) < total {
		return errProjectManage()
	}
	for _, p := range seen {
		if d.DeleteProjects && p.Level() < store.AccessAdmin {
			return errProjectManage()
		}
	}
	return nil
}

// deletionPreview says what deleting g with its projects (all) does, and computes the token
// over everything that decides it: the group's and each project's access and, when the projects
// are deleted, each document's uuid and version.
func deletionPreview(ctx context.Context, t *store.AccessTx, c store.Caller, g store.ProjectGroup, all []store.Project, deleteProjects bool) (*DeletionPreview, error) {
	var facts store.AccessFacts
	if err := t.GroupAccess(ctx, &facts, g.UUID); err != nil {
		return nil, err
	}
	members, err := t.GroupMemberCount(ctx, g.UUID)
	if err != nil {
		return nil, err
	}
	out := &DeletionPreview{GroupUUID: g.UUID, Name: g.Name, DeleteProjects: deleteProjects, Projects: []ProjectDeletion{},
		Members: members}
	documents := 0
	for _, p := range all {
		if err := t.ProjectAccess(ctx, &facts, p); err != nil {
			return nil, err
		}
		pd := ProjectDeletion{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility, Action: "ungrouped"}
		if deleteProjects {
			pd.Action = "deleted"
			if pd.Documents, err = t.DocumentAccess(ctx, &facts, p.UUID); err != nil {
				return nil, err
			}
			documents += pd.Documents
		}
		out.Projects = append(out.Projects, pd)
	}
	mode := "ungroup"
	if deleteProjects {
		mode = "delete-projects"
		out.Summary = fmt.Sprintf("Deletes the group %q and its %d project(s) with their %d document(s), comments and "+
			"activities; %d member(s) lose their role on the group. This cannot be undone.", g.Name, len(all), documents, members)
	} else {
		out.Summary = fmt.Sprintf("Deletes the group %q; its %d project(s) stay, ungrouped, and %d member(s) lose their role "+
			"on the group, and with it the access it gave them to those projects.", g.Name, len(all), members)
	}
	out.Token = confirmToken(facts, "group-delete", c, g.UUID, mode)
	return out, nil
}
