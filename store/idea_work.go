package store

import (
	"context"
	"slices"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// ProposalBrief is a proposal as a list of an idea's proposals shows it.
type ProposalBrief struct {
	UUID   string
	Title  string
	Status vocab.ProposalStatus
}

// IdeaWork is what came of an idea: the idea-input proposals of its project that list it (newest
// first, at most EntityListRows, with their number), and the tasks of the newest approved one, the
// proposal whose tasks decide its derived status (docs/rules.md §5.1): done or closed of all.
type IdeaWork struct {
	Proposals     []ProposalBrief
	ProposalCount int
	TasksDone     int
	TasksTotal    int
}

// IdeasWork reads the work of each of ideaUUIDs, ideas of projectUUID. It reads the proposals'
// uuid, title, status and inputs (not their drafts) and counts tasks in the database.
// The caller has passed the access gate.
func (s *Store) IdeasWork(ctx context.Context, projectUUID string, ideaUUIDs []string) (map[string]IdeaWork, error) {
	out := map[string]IdeaWork{}
	if len(ideaUUIDs) == 0 {
		return out, nil
	}
	var props []Proposal
	err := s.DB.NewSelect().Model(&props).Column("uuid", "title", "status", "input_uuids", "created_at").
		Where("project_uuid = ?", projectUUID).Where("input_type = 'idea'").
		Order("created_at DESC", "uuid DESC").Scan(ctx)
	if err != nil {
		return nil, err
	}
	latest := map[string]string{} // idea -> its newest approved proposal
	for _, id := range ideaUUIDs {
		w := IdeaWork{Proposals: []ProposalBrief{}}
		for _, p := range props {
			if !slices.Contains(p.InputUUIDs, id) {
				continue
			}
			w.ProposalCount++
			if len(w.Proposals) < EntityListRows {
				w.Proposals = append(w.Proposals, ProposalBrief{UUID: p.UUID, Title: p.Title, Status: p.Status})
			}
			if _, ok := latest[id]; !ok && p.Status == vocab.ProposalApproved {
				latest[id] = p.UUID
			}
		}
		out[id] = w
	}
	counts, err := s.taskCounts(ctx, latest)
	if err != nil {
		return nil, err
	}
	for id, p := range latest {
		w := out[id]
		w.TasksDone, w.TasksTotal = counts[p][0], counts[p][1]
		out[id] = w
	}
	return out, nil
}

// taskCounts counts, per proposal among the values of latest, its tasks done or closed and all.
func (s *Store) taskCounts(ctx context.Context, latest map[string]string) (map[string][2]int, error) {
	out := map[string][2]int{}
	var ids []string
	for _, p := range latest {
		if !slices.Contains(ids, p) {
			ids = append(ids, p)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ProposalUUID string           `bun:"proposal_uuid"`
		Status       vocab.TaskStatus `bun:"status"`
		N            int              `bun:"n"`
	}
	err := s.DB.NewSelect().Table("tasks").ColumnExpr("proposal_uuid, status, count(*) AS n").
		Where("proposal_uuid IN (?)", bun.List(ids)).Group("proposal_uuid", "status").Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		c := out[r.ProposalUUID]
		if r.Status == vocab.TaskDone || r.Status == vocab.TaskClosed {
			c[0] += r.N
		}
		c[1] += r.N
		out[r.ProposalUUID] = c
	}
	return out, nil
}

// IdeaTitles maps the uuids of ideas of projectUUID among uuids to their titles.
func (s *Store) IdeaTitles(ctx context.Context, projectUUID string, uuids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(uuids) == 0 {
		return out, nil
	}
	var ideas []Idea
	err := s.DB.NewSelect().Model(&ideas).Column("uuid", "title").Where("project_uuid = ?", projectUUID).
		Where("uuid IN (?)", bun.List(uuids)).Scan(ctx)
	for _, i := range ideas {
		out[i.UUID] = i.Title
	}
	return out, err
}
