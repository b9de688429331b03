package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// IdeaAccess is the project-access gate for an idea (docs/rules.md §6.3): the idea when the caller's level
// on its project is at least need. A missing or hidden idea is "Idea not found"; a visible one
// with too low a level is ErrForbidden.
func (s *Store) IdeaAccess(ctx context.Context, c Caller, ideaUUID string, need Access) (*Idea, *ProjectView, error) {
	if !vocab.IsUUID(ideaUUID) {
		return nil, nil, NotFound("Idea")
	}
	var i Idea
	err := s.DB.NewSelect().Model(&i).Where("uuid = ?", ideaUUID).Where("company_uuid = ?", c.CompanyUUID).Scan(ctx)
	if err != nil {
		return nil, nil, mapErr(err, "Idea")
	}
	p, err := s.projectGate(ctx, c, i.ProjectUUID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("Idea")
	}
	if err != nil {
		return nil, nil, err
	}
	if p.Level() < need {
		return nil, nil, ErrForbidden
	}
	return &i, p, nil
}

// IdeaRow is a row of chorus_get_ideas with its derived counts.
type IdeaRow struct {
	Idea
	ChildCount  int
	ReportCount int
}

// reportCounts counts, per idea, the report documents of approved or closed idea-input
// proposals that list the idea as an input (docs/rules.md §4.3, reportCount).
func reportCounts(ctx context.Context, db bun.IDB, projectUUID string) (map[string]int, error) {
	var props []Proposal
	err := db.NewSelect().Model(&props).Column("uuid", "input_uuids").
		Where("project_uuid = ?", projectUUID).Where("input_type = 'idea'").Where("status IN (?)", bun.List(reportedProposals)).Scan(ctx)
	if err != nil || len(props) == 0 {
		return map[string]int{}, err
	}
	ids := make([]string, len(props))
	for i, p := range props {
		ids[i] = p.UUID
	}
	var docs []Document
	err = db.NewSelect().Model(&docs).Column("proposal_uuid").Where("type = 'report'").
		Where("proposal_uuid IN (?)", bun.List(ids)).Scan(ctx)
	if err != nil {
		return nil, err
	}
	perProposal := map[string]int{}
	for _, d := range docs {
		perProposal[*d.ProposalUUID]++
	}
	out := map[string]int{}
	for _, p := range props {
		for _, in := range p.InputUUIDs {
			out[in] += perProposal[p.UUID]
		}
	}
	return out, nil
}

// ListIdeas returns a page of a project's ideas, newest first, optionally of one status, with
// childCount and reportCount (docs/rules.md §4.3, chorus_get_ideas).
func (s *Store) ListIdeas(ctx context.Context, projectUUID, status string, limit, offset int) ([]IdeaRow, int, error) {
	var ideas []Idea
	q := s.DB.NewSelect().Model(&ideas).Where("project_uuid = ?", projectUUID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	total, err := q.Order("created_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := make([]IdeaRow, len(ideas))
	if len(ideas) == 0 {
		return out, int(total), nil
	}
	ids := make([]string, len(ideas))
	for i := range ideas {
		ids[i] = ideas[i].UUID
	}
	var kids []struct {
		ParentUUID string `bun:"parent_uuid"`
		N          int    `bun:"n"`
	}
	err = s.DB.NewSelect().Table("ideas").ColumnExpr("parent_uuid, count(*) AS n").
		Where("parent_uuid IN (?)", bun.List(ids)).Group("parent_uuid").Scan(ctx, &kids)
	if err != nil {
		return nil, 0, err
	}
	reports, err := reportCounts(ctx, s.DB, projectUUID)
	if err != nil {
		return nil, 0, err
	}
	for i, idea := range ideas {
		out[i] = IdeaRow{Idea: idea, ReportCount: reports[idea.UUID]}
		for _, k := range kids {
			if k.ParentUUID == idea.UUID {
				out[i].ChildCount = k.N
			}
		}
	}
	return out, int(total), nil
}

// reportedProposals are the statuses of the proposals whose reports an idea counts
// (docs/rules.md §4.3, reportCount).
var reportedProposals = []vocab.ProposalStatus{vocab.ProposalApproved, vocab.ProposalClosed}

// AvailableIdeas returns up to 50 open ideas of a project, newest first.
func (s *Store) AvailableIdeas(ctx context.Context, projectUUID string) ([]Idea, error) {
	var ideas []Idea
	err := s.DB.NewSelect().Model(&ideas).Where("project_uuid = ?", projectUUID).Where("status = ?", vocab.IdeaOpen).
		Order("created_at DESC", "uuid DESC").Limit(50).Scan(ctx)
	return ideas, err
}

// IdeaChild is a direct child of an idea with its derived status.
type IdeaChild struct {
	UUID, Title, Status, DerivedStatus string
}

// IdeaDetail is everything chorus_get_idea shows.
type IdeaDetail struct {
	Idea            Idea
	Project         Project
	Parent          *Idea
	Children        []IdeaChild
	DescendantUUIDs []string
	Reports         []Document // at most EntityListRows, newest first
	ReportCount     int
	References      []Reference // at most EntityListRows, oldest first
	ReferenceCount  int
	Derived         Derived
}

// GetIdeaDetail reads an idea with its lineage (docs/rules.md §5.5), derived statuses (§5.1), reports
// and references (§1.16).
// The caller has passed the access gate.
func (s *Store) GetIdeaDetail(ctx context.Context, i *Idea, p *ProjectView) (*IdeaDetail, error) {
	d := &IdeaDetail{Idea: *i, Project: p.Project, DescendantUUIDs: []string{}, Children: []IdeaChild{}, Reports: []Document{}}
	var all []Idea
	err := s.DB.NewSelect().Model(&all).Column("uuid", "title", "status", "parent_uuid", "created_at").
		Where("project_uuid = ?", i.ProjectUUID).Order("created_at ASC", "uuid ASC").Scan(ctx)
	if err != nil {
		return nil, err
	}
	derived, err := s.DeriveStatuses(ctx, []string{i.ProjectUUID})
	if err != nil {
		return nil, err
	}
	d.Derived = derived[i.UUID]
	children := map[string][]Idea{}
	for _, x := range all {
		if x.ParentUUID != nil {
			children[*x.ParentUUID] = append(children[*x.ParentUUID], x)
		}
		if i.ParentUUID != nil && x.UUID == *i.ParentUUID {
			parent := x
			d.Parent = &parent
		}
	}
	for _, c := range children[i.UUID] {
		d.Children = append(d.Children, IdeaChild{UUID: c.UUID, Title: c.Title, Status: string(c.Status), DerivedStatus: derived[c.UUID].Status})
	}
	queue := []string{i.UUID}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range children[cur] {
			if c.UUID != i.UUID && !slices.Contains(d.DescendantUUIDs, c.UUID) {
				d.DescendantUUIDs = append(d.DescendantUUIDs, c.UUID)
				queue = append(queue, c.UUID)
			}
		}
	}
	var props []Proposal
	err = s.DB.NewSelect().Model(&props).Column("uuid", "input_uuids").Where("project_uuid = ?", i.ProjectUUID).
		Where("input_type = 'idea'").Where("status IN (?)", bun.List(reportedProposals)).Scan(ctx)
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, pr := range props {
		if slices.Contains(pr.InputUUIDs, i.UUID) {
			pids = append(pids, pr.UUID)
		}
	}
	if len(pids) > 0 {
		n, err := s.DB.NewSelect().Model(&d.Reports).Where("type = 'report'").Where("proposal_uuid IN (?)", bun.List(pids)).
			Order("created_at DESC", "uuid DESC").Limit(EntityListRows).ScanAndCount(ctx)
		if err != nil {
			return nil, err
		}
		d.ReportCount = int(n)
	}
	if d.References, d.ReferenceCount, err = s.References(ctx, "idea", i.UUID, EntityListRows, 0); err != nil {
		return nil, err
	}
	return d, nil
}

// Elaboration is an idea's rounds with their questions, oldest round first.
func (s *Store) Elaboration(ctx context.Context, ideaUUID string) ([]ElaborationRound, error) {
	var rounds []ElaborationRound
	err := s.DB.NewSelect().Model(&rounds).Where("idea_uuid = ?", ideaUUID).
		Relation("Questions", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("sort_order ASC") }).
		Order("round_number ASC").Scan(ctx)
	return rounds, err
}

// Round returns one round with its questions.
func (s *Store) Round(ctx context.Context, roundUUID string) (*ElaborationRound, error) {
	var r ElaborationRound
	err := s.DB.NewSelect().Model(&r).Where("uuid = ?", roundUUID).
		Relation("Questions", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("sort_order ASC") }).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Elaboration round")
	}
	return &r, err
}
