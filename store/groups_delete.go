package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// ErrGroupHasWork: deleteProjects would delete lifecycle entities (docs/rules.md §4.11).
type ErrGroupHasWork struct{ Ideas, Proposals, Tasks int }

func (e *ErrGroupHasWork) Error() string {
	return fmt.Sprintf("Cannot delete the group's projects: they still hold %d idea(s), %d proposal(s) and %d task(s). "+
		"Delete those first (or move the ideas to another project with chorus_move_idea), or delete the group with "+
		"deleteProjects=false, which keeps the projects ungrouped", e.Ideas, e.Proposals, e.Tasks)
}

// GroupDeletion is chorus_admin_delete_project_group: a preview, or the deletion it showed.
type GroupDeletion struct {
	GroupUUID      string
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

// ProjectDeletion is one project of a group being deleted: "deleted" (with its documents, their
// comments and its activities) or "ungrouped".
type ProjectDeletion struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	Visibility string `json:"visibility"`
	Action     string `json:"action"`
	Documents  int    `json:"documents"`
}

// DeleteGroup deletes a group, or previews it (docs/rules.md §4.11, §6.5). It is destructive
// and changes access, so the caller needs an explicit admin role on the group (a public group's
// editor floor is not enough) and admin on every project it deletes, and applying needs the
// token of a preview made on the same state: the group's access, each project's access and, when
// its projects are deleted, every document they hold (so one added since makes the token
// stale). Without deleteProjects the projects stay, ungrouped; with it they are deleted with
// their documents, comments and activities, which is refused while they hold ideas, proposals or
// tasks (their workflows would outlive their rows). It returns the preview, or what was done.
func (s *Store) DeleteGroup(ctx context.Context, c Caller, d GroupDeletion) (*DeletionPreview, error) {
	var out *DeletionPreview
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = nil
		if err := lockRow(ctx, tx, "project_groups", d.GroupUUID); err != nil {
			return err
		}
		v, err := s.groupIn(ctx, tx, c, d.GroupUUID)
		if err != nil {
			return err
		}
		if !v.IsAdmin() {
			return ErrGroupManage
		}
		var all []Project
		if err := tx.NewSelect().Model(&all).Where("group_uuid = ?", d.GroupUUID).Order("name ASC", "uuid ASC").Scan(ctx); err != nil {
			return err
		}
		var seen []ProjectView
		if err := s.projectRoles(c).Conn(tx).Where("project.group_uuid = ?", d.GroupUUID).Scan(ctx, &seen); err != nil {
			return err
		}
		if len(seen) < len(all) {
			return ErrProjectManage
		}
		for _, p := range seen {
			if d.DeleteProjects && p.Level() < AccessAdmin {
				return ErrProjectManage
			}
		}
		ids := make([]string, len(all))
		for i, p := range all {
			ids[i] = p.UUID
		}
		if d.DeleteProjects && len(ids) > 0 {
			var work ErrGroupHasWork
			for _, x := range []struct {
				table string
				n     *int
			}{{"ideas", &work.Ideas}, {"proposals", &work.Proposals}, {"tasks", &work.Tasks}} {
				n, err := tx.NewSelect().Table(x.table).Where("project_uuid IN (?)", bun.List(ids)).Count(ctx)
				if err != nil {
					return err
				}
				*x.n = int(n)
			}
			if work.Ideas+work.Proposals+work.Tasks > 0 {
				return &work
			}
		}
		p, err := groupDeletionPreview(ctx, tx, c, v.ProjectGroup, all, d.DeleteProjects)
		if err != nil {
			return err
		}
		out = p
		if d.Preview {
			return nil
		}
		switch {
		case d.Token == "":
			return ErrConfirmationRequired
		case d.Token != p.Token:
			return ErrStaleToken
		}
		p.Token = ""
		if d.DeleteProjects && len(ids) > 0 {
			for _, q := range []*bun.DeleteQuery{
				tx.NewDelete().Table("comments").Where("target_type = 'document'").
					Where("target_uuid IN (SELECT uuid FROM documents WHERE project_uuid IN (?))", bun.List(ids)),
				tx.NewDelete().Table("documents").Where("project_uuid IN (?)", bun.List(ids)),
				tx.NewDelete().Table("activities").Where("project_uuid IN (?)", bun.List(ids)),
				tx.NewDelete().Table("project_members").Where("project_uuid IN (?)", bun.List(ids)),
				tx.NewDelete().Table("projects").Where("uuid IN (?)", bun.List(ids)),
			} {
				if _, err := q.Exec(ctx); err != nil {
					return err
				}
			}
		} else if len(ids) > 0 {
			if _, err := tx.NewUpdate().Table("projects").Set("group_uuid = NULL").Set("updated_at = ?", Now()).
				Where("group_uuid = ?", d.GroupUUID).Exec(ctx); err != nil {
				return err
			}
		}
		if _, err := tx.NewDelete().Table("project_group_members").Where("group_uuid = ?", d.GroupUUID).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewDelete().Table("project_groups").Where("uuid = ?", d.GroupUUID).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// groupDeletionPreview says what deleting g with its projects (all) does, and computes the token
// over everything that decides it: the group's and each project's access and, when the projects
// are deleted, each document's uuid and version.
func groupDeletionPreview(ctx context.Context, tx bun.IDB, c Caller, g ProjectGroup, all []Project, deleteProjects bool) (*DeletionPreview, error) {
	var st accessState
	if err := st.group(ctx, tx, g.UUID); err != nil {
		return nil, err
	}
	members, err := tx.NewSelect().Table("project_group_members").Where("group_uuid = ?", g.UUID).Count(ctx)
	if err != nil {
		return nil, err
	}
	out := &DeletionPreview{GroupUUID: g.UUID, Name: g.Name, DeleteProjects: deleteProjects, Projects: []ProjectDeletion{},
		Members: int(members)}
	documents := 0
	for _, p := range all {
		if err := st.project(ctx, tx, p); err != nil {
			return nil, err
		}
		pd := ProjectDeletion{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility, Action: "ungrouped"}
		if deleteProjects {
			pd.Action = "deleted"
			var docs []Document
			if err := tx.NewSelect().Model(&docs).Column("uuid", "version").Where("project_uuid = ?", p.UUID).Scan(ctx); err != nil {
				return nil, err
			}
			for _, d := range docs {
				st.add("document %s %s v%d", p.UUID, d.UUID, d.Version)
			}
			pd.Documents = len(docs)
			documents += len(docs)
		}
		out.Projects = append(out.Projects, pd)
	}
	if deleteProjects {
		out.Summary = fmt.Sprintf("Deletes the group %q and its %d project(s) with their %d document(s), comments and "+
			"activities; %d member(s) lose their role on the group. This cannot be undone.", g.Name, len(all), documents, members)
	} else {
		out.Summary = fmt.Sprintf("Deletes the group %q; its %d project(s) stay, ungrouped, and %d member(s) lose their role "+
			"on the group, and with it the access it gave them to those projects.", g.Name, len(all), members)
	}
	mode := "ungroup"
	if deleteProjects {
		mode = "delete-projects"
	}
	out.Token = st.token("group-delete", c, g.UUID, mode)
	return out, nil
}
