package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Derived idea statuses (docs/rules.md §5.1): vocab.DerivedStatus's, as the strings the store's
// results carry.
const (
	DerivedTodo                 = string(vocab.DerivedTodo)
	DerivedInProgress           = string(vocab.DerivedInProgress)
	DerivedHumanConductRequired = string(vocab.DerivedHumanConductRequired)
	DerivedDone                 = string(vocab.DerivedDone)
)

// ChildProgress is a theme's roll-up over its direct children.
type ChildProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Derived is an idea's derived status and, for a theme with children, its children's progress.
type Derived struct {
	Status        string
	ChildProgress *ChildProgress
}

// ideaFacts is the part of an idea that derivation reads.
type ideaFacts struct {
	UUID              string           `bun:"uuid"`
	ProjectUUID       string           `bun:"project_uuid"`
	Status            vocab.IdeaStatus `bun:"status"`
	ElaborationStatus *string          `bun:"elaboration_status"`
	IsContainer       bool             `bun:"is_container"`
	ParentUUID        *string          `bun:"parent_uuid"`
}

type proposalFacts struct {
	UUID       string               `bun:"uuid"`
	InputUUIDs []string             `bun:"input_uuids,type:jsonb"`
	Status     vocab.ProposalStatus `bun:"status"`
	CreatedAt  time.Time            `bun:"created_at"`
}

// countedProposals are the statuses of the proposals an idea's derived status reads: one
// waiting for review, and the approved ones whose tasks count (docs/rules.md §5.1).
var countedProposals = []vocab.ProposalStatus{vocab.ProposalPending, vocab.ProposalApproved}

// DeriveStatuses computes the derived status (docs/rules.md §5.1) of every idea in the given projects.
func (s *Store) DeriveStatuses(ctx context.Context, projectUUIDs []string) (map[string]Derived, error) {
	return deriveStatuses(ctx, s.DB, projectUUIDs)
}

func deriveStatuses(ctx context.Context, db bun.IDB, projectUUIDs []string) (map[string]Derived, error) {
	if len(projectUUIDs) == 0 {
		return map[string]Derived{}, nil
	}
	var ideas []ideaFacts
	err := db.NewSelect().Table("ideas").Column(ideaFactColumns...).
		Where("project_uuid IN (?)", bun.List(projectUUIDs)).Scan(ctx, &ideas)
	if err != nil {
		return nil, err
	}
	return deriveFrom(ctx, db, projectUUIDs, ideas)
}

var ideaFactColumns = []string{"uuid", "project_uuid", "status", "elaboration_status", "is_container", "parent_uuid"}

// deriveFrom computes the derived status of each of ideas (of projectUUIDs). A theme's roll-up
// counts only the children among ideas, so ideas holds every descendant of each idea whose
// status is wanted. Only the statuses of the tasks that count are read: those of the newest
// approved proposal of each idea, one row per distinct status.
func deriveFrom(ctx context.Context, db bun.IDB, projectUUIDs []string, ideas []ideaFacts) (map[string]Derived, error) {
	out := map[string]Derived{}
	var props []proposalFacts
	err := db.NewSelect().Table("proposals").Column("uuid", "input_uuids", "status", "created_at").
		Where("project_uuid IN (?)", bun.List(projectUUIDs)).
		Where("input_type = 'idea'").Where("status IN (?)", bun.List(countedProposals)).
		Scan(ctx, &props)
	if err != nil {
		return nil, err
	}
	var counted []string // the newest approved proposal of each idea
	for _, i := range ideas {
		if u := latestApproved(i.UUID, props); u != "" && !slices.Contains(counted, u) {
			counted = append(counted, u)
		}
	}
	taskStatuses := map[string][]vocab.TaskStatus{} // proposal uuid -> the distinct statuses of its tasks
	if len(counted) > 0 {
		var rows []struct {
			ProposalUUID string           `bun:"proposal_uuid"`
			Status       vocab.TaskStatus `bun:"status"`
		}
		err = db.NewSelect().Table("tasks").Distinct().Column("proposal_uuid", "status").
			Where("proposal_uuid IN (?)", bun.List(counted)).Scan(ctx, &rows)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			taskStatuses[r.ProposalUUID] = append(taskStatuses[r.ProposalUUID], r.Status)
		}
	}

	own := map[string]string{}
	children := map[string][]string{}
	for _, i := range ideas {
		own[i.UUID] = ownStatus(i, props, taskStatuses)
		if i.ParentUUID != nil {
			children[*i.ParentUUID] = append(children[*i.ParentUUID], i.UUID)
		}
	}
	byUUID := map[string]ideaFacts{}
	for _, i := range ideas {
		byUUID[i.UUID] = i
	}
	var resolve func(uuid string, depth int) Derived
	resolve = func(uuid string, depth int) Derived {
		if d, ok := out[uuid]; ok {
			return d
		}
		i := byUUID[uuid]
		d := Derived{Status: own[uuid]}
		// A theme with children rolls up from them; depth guards against a corrupt cycle.
		if kids := children[uuid]; i.IsContainer && len(kids) > 0 && depth < 64 {
			p := ChildProgress{Total: len(kids)}
			anyStarted := false
			for _, k := range kids {
				ks := resolve(k, depth+1).Status
				if ks == DerivedDone {
					p.Done++
				}
				if ks != DerivedTodo {
					anyStarted = true
				}
			}
			switch {
			case p.Done == p.Total:
				d.Status = DerivedDone
			case anyStarted:
				d.Status = DerivedInProgress
			default:
				d.Status = DerivedTodo
			}
			d.ChildProgress = &p
		}
		out[uuid] = d
		return d
	}
	for _, i := range ideas {
		resolve(i.UUID, 0)
	}
	return out, nil
}

// IdeaProgress is one idea's derived status (docs/rules.md §5.1) with what its workflow needs to
// show it and pass a change on (its ChorusProgress search attribute).
type IdeaProgress struct {
	// Found is false when the idea has no row (deleted).
	Found  bool   `json:"found"`
	Status string `json:"status,omitempty"`
	// ParentUUID is the idea's parent, "" for none.
	ParentUUID string `json:"parentUuid,omitempty"`
	// Rollup: the status comes from the idea's children (a theme with children), not its own.
	Rollup bool `json:"rollup,omitempty"`
}

// IdeaProgress computes one idea's derived status, with DeriveStatuses's rules over its project.
func (s *Store) IdeaProgress(ctx context.Context, ideaUUID string) (IdeaProgress, error) {
	var out IdeaProgress
	// The idea may move to another project between the two reads: then read it again there.
	for range 3 {
		var i ideaFacts
		err := s.DB.NewSelect().Table("ideas").Column("uuid", "project_uuid", "parent_uuid").Where("uuid = ?", ideaUUID).Scan(ctx, &i)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		// Only the idea and its descendants (its theme roll-up): every task write of the project
		// asks for a refresh, so reading the whole project here would cost O(project) per write.
		subtree, err := s.ideaSubtree(ctx, i.ProjectUUID, ideaUUID)
		if err != nil {
			return out, err
		}
		derived, err := deriveFrom(ctx, s.DB, []string{i.ProjectUUID}, subtree)
		if err != nil {
			return out, err
		}
		if d, ok := derived[ideaUUID]; ok {
			out.Found, out.Status, out.Rollup = true, d.Status, d.ChildProgress != nil
			if i.ParentUUID != nil {
				out.ParentUUID = *i.ParentUUID
			}
			return out, nil
		}
	}
	return out, errors.New("the idea kept moving between projects while its progress was read")
}

// ideaSubtree reads the facts of ideas of the project (roots) and of all their descendants, each
// once, a level at a time (at most 64 levels, which also stops a corrupt cycle).
func (s *Store) ideaSubtree(ctx context.Context, projectUUID string, roots ...string) ([]ideaFacts, error) {
	var out []ideaFacts
	seen := map[string]bool{}
	frontier := roots
	for depth := 0; len(frontier) > 0 && depth < 64; depth++ {
		var level []ideaFacts
		q := s.DB.NewSelect().Table("ideas").Column(ideaFactColumns...).Where("project_uuid = ?", projectUUID)
		if depth == 0 {
			q = q.Where("uuid IN (?)", bun.List(frontier))
		} else {
			q = q.Where("parent_uuid IN (?)", bun.List(frontier))
		}
		if err := q.Scan(ctx, &level); err != nil {
			return nil, err
		}
		frontier = nil
		for _, i := range level {
			if !seen[i.UUID] {
				seen[i.UUID] = true
				out = append(out, i)
				frontier = append(frontier, i.UUID)
			}
		}
	}
	return out, nil
}

// DeriveStatusesOf computes the derived status (docs/rules.md §5.1) of the given ideas of a
// project, reading only them and their descendants (a theme's roll-up), not the whole project.
func (s *Store) DeriveStatusesOf(ctx context.Context, projectUUID string, ideaUUIDs []string) (map[string]Derived, error) {
	if len(ideaUUIDs) == 0 {
		return map[string]Derived{}, nil
	}
	subtree, err := s.ideaSubtree(ctx, projectUUID, ideaUUIDs...)
	if err != nil {
		return nil, err
	}
	return deriveFrom(ctx, s.DB, []string{projectUUID}, subtree)
}

// IdeaParent is an idea's parent: "" when it has none or no longer exists.
func (s *Store) IdeaParent(ctx context.Context, ideaUUID string) (string, error) {
	var parent *string
	err := s.DB.NewSelect().Table("ideas").Column("parent_uuid").Where("uuid = ?", ideaUUID).Scan(ctx, &parent)
	if errors.Is(err, sql.ErrNoRows) || parent == nil {
		return "", nil
	}
	return *parent, err
}

// ProposalInputIdeas lists the input ideas of those of the given proposals that take ideas as
// input (whose derived statuses they count in, docs/rules.md §5.1), each once.
func (s *Store) ProposalInputIdeas(ctx context.Context, proposalUUIDs ...string) ([]string, error) {
	if len(proposalUUIDs) == 0 {
		return nil, nil
	}
	var props []proposalFacts
	err := s.DB.NewSelect().Table("proposals").Column("uuid", "input_uuids").
		Where("uuid IN (?)", bun.List(proposalUUIDs)).Where("input_type = 'idea'").Scan(ctx, &props)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range props {
		for _, u := range p.InputUUIDs {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// latestApproved is the uuid of the newest approved proposal listing idea among props ("" for
// none); only its tasks count toward the idea's status (docs/rules.md §5.1).
func latestApproved(idea string, props []proposalFacts) string {
	var latest *proposalFacts
	for k := range props {
		p := &props[k]
		if p.Status == vocab.ProposalApproved && slices.Contains(p.InputUUIDs, idea) &&
			(latest == nil || p.CreatedAt.After(latest.CreatedAt)) {
			latest = p
		}
	}
	if latest == nil {
		return ""
	}
	return latest.UUID
}

// ownStatus is the table of docs/rules.md §5.1 for one idea, before any theme roll-up.
func ownStatus(i ideaFacts, props []proposalFacts, taskStatuses map[string][]vocab.TaskStatus) string {
	switch i.Status {
	case vocab.IdeaOpen:
		return DerivedTodo
	case vocab.IdeaElaborating:
		if i.ElaborationStatus != nil && *i.ElaborationStatus == string(vocab.ElaborationPendingAnswers) {
			return DerivedHumanConductRequired
		}
		return DerivedInProgress
	case vocab.IdeaElaborated:
	default:
		return DerivedTodo
	}
	for _, p := range props {
		if p.Status == vocab.ProposalPending && slices.Contains(p.InputUUIDs, i.UUID) {
			return DerivedHumanConductRequired // a proposal waits for review
		}
	}
	latest := latestApproved(i.UUID, props)
	if latest == "" {
		return DerivedInProgress // planning
	}
	ts := taskStatuses[latest]
	if slices.Contains(ts, vocab.TaskToVerify) {
		return DerivedHumanConductRequired // work waits for verification
	}
	if len(ts) > 0 && !slices.ContainsFunc(ts, func(s vocab.TaskStatus) bool { return s != vocab.TaskDone && s != vocab.TaskClosed }) {
		return DerivedDone
	}
	return DerivedInProgress
}

// ActiveProject is one entry of chorus_checkin's activeProjects.
type ActiveProject struct {
	UUID            string
	Name            string
	ActiveIdeaCount int
	LastUpdated     time.Time
}

// maxActiveProjects is how many projects chorus_checkin reports.
const maxActiveProjects = 10

// ActiveProjects groups the caller's active ideas by project (docs/rules.md §4.1, chorus_checkin): ideas
// in projects the caller can see, assigned to the caller agent or its owner user, whose derived
// status is not done. It keeps the ten projects whose active ideas changed most recently.
func (s *Store) ActiveProjects(ctx context.Context, c Caller) ([]ActiveProject, error) {
	var rows []struct {
		UUID        string    `bun:"uuid"`
		ProjectUUID string    `bun:"project_uuid"`
		ProjectName string    `bun:"project_name"`
		UpdatedAt   time.Time `bun:"updated_at"`
	}
	visible := s.visibleProjects(c, false).ColumnExpr("project.uuid AS visible_uuid")
	err := s.DB.NewSelect().TableExpr("ideas AS i").
		ColumnExpr("i.uuid, i.project_uuid, i.updated_at, p.name AS project_name").
		Join("JOIN projects AS p ON p.uuid = i.project_uuid").
		Where("i.company_uuid = ?", c.CompanyUUID).
		Where("i.project_uuid IN (SELECT visible_uuid FROM (?) AS v)", visible).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("(i.assignee_type = 'agent' AND i.assignee_uuid = ?)", c.AgentUUID)
			if c.OwnerUUID != "" {
				q = q.WhereOr("(i.assignee_type = 'user' AND i.assignee_uuid = ?)", c.OwnerUUID)
			}
			return q
		}).
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	var projects []string
	for _, r := range rows {
		if !slices.Contains(projects, r.ProjectUUID) {
			projects = append(projects, r.ProjectUUID)
		}
	}
	derived, err := s.DeriveStatuses(ctx, projects)
	if err != nil {
		return nil, err
	}
	byProject := map[string]*ActiveProject{}
	for _, r := range rows {
		if derived[r.UUID].Status == DerivedDone {
			continue
		}
		ap := byProject[r.ProjectUUID]
		if ap == nil {
			ap = &ActiveProject{UUID: r.ProjectUUID, Name: r.ProjectName}
			byProject[r.ProjectUUID] = ap
		}
		ap.ActiveIdeaCount++
		if r.UpdatedAt.After(ap.LastUpdated) {
			ap.LastUpdated = r.UpdatedAt
		}
	}
	out := make([]ActiveProject, 0, len(byProject))
	for _, ap := range byProject {
		out = append(out, *ap)
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].LastUpdated.Equal(out[b].LastUpdated) {
			return out[a].LastUpdated.After(out[b].LastUpdated)
		}
		return out[a].UUID < out[b].UUID
	})
	if len(out) > maxActiveProjects {
		out = out[:maxActiveProjects]
	}
	return out, nil
}
