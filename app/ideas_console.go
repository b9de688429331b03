package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Reads for people: the idea tracker and an idea's page of the console (issue 22). They carry
// the same access checks as chorus_get_ideas and chorus_get_idea (docs/rules.md §6.3): a
// hidden project or idea is "Project not found" / "Idea not found".

// AnswerInput is one answer of AnswerElaboration: a question id and either one of its option
// ids or custom text (docs/rules.md §2.2, chorus_answer_elaboration).
type AnswerInput = workflows.AnswerInput

// IdeaTrackerRow is one idea of a project's tracker: the row chorus_get_ideas gives, its derived
// status (docs/rules.md §5.1), its assignee's name, its parent's title (lineage, §5.5) and its work.
type IdeaTrackerRow struct {
	store.IdeaRow
	Derived     store.Derived
	Assignee    *store.ActorRef
	ParentTitle string
	Work        store.IdeaWork
}

// IdeaTracker is a page of a project's ideas, newest first, and how many there are.
type IdeaTracker struct {
	Project *store.ProjectView
	Ideas   []IdeaTrackerRow
	Total   int
}

// IdeaTracker reads a page of size ideas of a project from offset, for a caller who can see it
// (viewer; else "Project not found").
func (a *App) IdeaTracker(ctx context.Context, r Request, projectUUID string, size, offset int) (IdeaTracker, error) {
	p, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer)
	if err != nil {
		return IdeaTracker{}, err
	}
	rows, total, err := a.Store.ListIdeas(ctx, projectUUID, "", size, offset)
	if err != nil {
		return IdeaTracker{}, err
	}
	var ids, parents []string
	namer := a.Store.NewNamer()
	for _, i := range rows {
		ids = append(ids, i.UUID)
		if i.ParentUUID != nil {
			parents = append(parents, *i.ParentUUID)
		}
		if i.AssigneeUUID != nil && i.AssigneeType != nil {
			namer.Prefetch(ctx, store.ActorRef{Type: *i.AssigneeType, UUID: *i.AssigneeUUID})
		}
	}
	derived, err := a.Store.DeriveStatusesOf(ctx, projectUUID, ids)
	if err != nil {
		return IdeaTracker{}, err
	}
	work, err := a.Store.IdeasWork(ctx, projectUUID, ids)
	if err != nil {
		return IdeaTracker{}, err
	}
	titles, err := a.Store.IdeaTitles(ctx, projectUUID, parents)
	if err != nil {
		return IdeaTracker{}, err
	}
	out := IdeaTracker{Project: p, Total: total, Ideas: make([]IdeaTrackerRow, len(rows))}
	for k, i := range rows {
		row := IdeaTrackerRow{IdeaRow: i, Derived: derived[i.UUID], Work: work[i.UUID]}
		if i.AssigneeType != nil {
			row.Assignee = namer.Ref(ctx, *i.AssigneeType, i.AssigneeUUID)
		}
		if i.ParentUUID != nil {
			row.ParentTitle = titles[*i.ParentUUID]
		}
		out.Ideas[k] = row
	}
	return out, nil
}

// IdeaOverview is an idea's page: what chorus_get_idea gives, its elaboration rounds (oldest
// first, with questions and answers), its work, the names of the people and agents it names, and
// whether the caller may change it (editor or admin on its project, docs/rules.md §6.3).
type IdeaOverview struct {
	*store.IdeaDetail
	CanEdit  bool
	Rounds   []store.ElaborationRound
	Work     store.IdeaWork
	Assignee *store.ActorRef
	Creator  *store.ActorRef
	// Names maps the uuid of whoever answered a question to their name.
	Names map[string]string
}

// IdeaOverview reads an idea the caller can see (else "Idea not found") for its page.
func (a *App) IdeaOverview(ctx context.Context, r Request, ideaUUID string) (IdeaOverview, error) {
	i, p, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessViewer)
	if err != nil {
		return IdeaOverview{}, err
	}
	d, err := a.Store.GetIdeaDetail(ctx, i, p)
	if err != nil {
		return IdeaOverview{}, err
	}
	out := IdeaOverview{IdeaDetail: d, CanEdit: p.Level() >= store.AccessEditor, Names: map[string]string{}}
	if out.Rounds, err = a.Store.Elaboration(ctx, i.UUID); err != nil {
		return IdeaOverview{}, err
	}
	work, err := a.Store.IdeasWork(ctx, i.ProjectUUID, []string{i.UUID})
	if err != nil {
		return IdeaOverview{}, err
	}
	out.Work = work[i.UUID]
	namer := a.Store.NewNamer()
	if i.AssigneeType != nil {
		out.Assignee = namer.Ref(ctx, *i.AssigneeType, i.AssigneeUUID)
	}
	out.Creator = namer.Ref(ctx, i.CreatedByType, &i.CreatedByUUID)
	for _, round := range out.Rounds {
		for _, q := range round.Questions {
			if q.AnsweredByUUID != nil && q.AnsweredByType != nil {
				out.Names[*q.AnsweredByUUID] = namer.Name(ctx, *q.AnsweredByType, *q.AnsweredByUUID)
			}
		}
	}
	return out, nil
}
