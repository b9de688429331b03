package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// ProposalAccess is the project-access gate for a proposal (docs/rules.md §6.3); see IdeaAccess.
func (s *Store) ProposalAccess(ctx context.Context, c Caller, proposalUUID string, need Access) (*Proposal, *ProjectView, error) {
	if !vocab.IsUUID(proposalUUID) {
		return nil, nil, NotFound("Proposal")
	}
	var p Proposal
	err := s.DB.NewSelect().Model(&p).Where("uuid = ?", proposalUUID).Where("company_uuid = ?", c.CompanyUUID).Scan(ctx)
	if err != nil {
		return nil, nil, mapErr(err, "Proposal")
	}
	pv, err := s.projectGate(ctx, c, p.ProjectUUID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("Proposal")
	}
	if err != nil {
		return nil, nil, err
	}
	if pv.Level() < need {
		return nil, nil, ErrForbidden
	}
	return &p, pv, nil
}

// ListProposals returns a page of a project's proposals, newest first, optionally of one status.
func (s *Store) ListProposals(ctx context.Context, projectUUID, status string, limit, offset int) ([]Proposal, int, error) {
	var rows []Proposal
	q := s.DB.NewSelect().Model(&rows).Column("uuid", "title", "status", "input_type", "input_uuids", "created_at", "updated_at").
		Where("project_uuid = ?", projectUUID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	total, err := q.Order("created_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(total), err
}

// ProposalsUsingIdeas returns the titles of idea-input proposals of the company, visible to
// the caller and other than exclude, that list any of ideaUUIDs as an input (docs/rules.md §8.11).
func (s *Store) ProposalsUsingIdeas(ctx context.Context, c Caller, ideaUUIDs []string, exclude string) ([]string, error) {
	var rows []Proposal
	visible := s.visibleProjects(c, false).ColumnExpr("project.uuid AS visible_uuid")
	err := s.DB.NewSelect().Model(&rows).Column("uuid", "title", "input_uuids").
		Where("company_uuid = ?", c.CompanyUUID).Where("input_type = 'idea'").Where("uuid <> ?", exclude).
		Where("project_uuid IN (SELECT visible_uuid FROM (?) AS v)", visible).
		Order("created_at ASC").Scan(ctx)
	if err != nil {
		return nil, err
	}
	var titles []string
	for _, p := range rows {
		if slices.ContainsFunc(p.InputUUIDs, func(u string) bool { return slices.Contains(ideaUUIDs, u) }) {
			titles = append(titles, p.Title)
		}
	}
	return titles, nil
}

// ProposalDocuments lists the documents materialized from (or reported on) a proposal.
func (s *Store) ProposalDocuments(ctx context.Context, proposalUUID string) ([]Document, error) {
	var docs []Document
	err := s.DB.NewSelect().Model(&docs).Where("proposal_uuid = ?", proposalUUID).Order("created_at ASC", "uuid ASC").Scan(ctx)
	return docs, err
}

// DocumentAccess is the project-access gate for a document (docs/rules.md §6.3); see IdeaAccess.
func (s *Store) DocumentAccess(ctx context.Context, c Caller, documentUUID string, need Access) (*Document, *ProjectView, error) {
	if !vocab.IsUUID(documentUUID) {
		return nil, nil, NotFound("Document")
	}
	var d Document
	err := s.DB.NewSelect().Model(&d).Where("uuid = ?", documentUUID).Where("company_uuid = ?", c.CompanyUUID).Scan(ctx)
	if err != nil {
		return nil, nil, mapErr(err, "Document")
	}
	pv, err := s.projectGate(ctx, c, d.ProjectUUID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("Document")
	}
	if err != nil {
		return nil, nil, err
	}
	if pv.Level() < need {
		return nil, nil, ErrForbidden
	}
	return &d, pv, nil
}

// ListDocuments returns a page of a project's documents, most recently updated first.
func (s *Store) ListDocuments(ctx context.Context, projectUUID, typ string, limit, offset int) ([]Document, int, error) {
	var rows []Document
	q := s.DB.NewSelect().Model(&rows).ExcludeColumn("content").Where("project_uuid = ?", projectUUID)
	if typ != "" {
		q = q.Where("type = ?", typ)
	}
	total, err := q.Order("updated_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(total), err
}

// CreateDocument inserts a document (version 1).
//
// A uuid that already names a document (a retried create, derived from its requestId) leaves it
// as it is and loads it into d.
func (s *Store) CreateDocument(ctx context.Context, d *Document) error {
	res, err := s.DB.NewInsert().Model(d).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
	if err != nil {
		return mapErr(err, "Document")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return mapErr(s.DB.NewSelect().Model(d).Where("uuid = ?", d.UUID).Scan(ctx), "Document")
	}
	return nil
}

// UpdateDocument sets a document's title and/or content and increments its version by one,
// even when neither is given (docs/rules.md §4.7), marking the row with changeID. It returns the updated
// row. A change whose id the row already carries was applied by an earlier attempt of the same
// call: nothing is written again (docs/write-path.md, "Exactly once").
func (s *Store) UpdateDocument(ctx context.Context, uuid string, title, content *string, changeID string) (*Document, error) {
	var d Document
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*Document)(nil)).Set("version = version + 1").Set("updated_at = ?", Now()).
			Set("change_id = ?", changeID).Where("uuid = ?", uuid).Where("change_id <> ?", changeID)
		if title != nil {
			q = q.Set("title = ?", *title)
		}
		if content != nil {
			if *content == "" {
				q = q.Set("content = NULL")
			} else {
				q = q.Set("content = ?", *content)
			}
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			err := tx.NewSelect().Model(&d).Where("uuid = ?", uuid).Where("change_id = ?", changeID).Scan(ctx)
			if err == nil {
				return nil // applied by an earlier attempt
			}
			return mapErr(err, "Document") // only a missing row is "not found"
		}
		return tx.NewSelect().Model(&d).Where("uuid = ?", uuid).Scan(ctx)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// DeleteDocument deletes a document and the comments on it.
func (s *Store) DeleteDocument(ctx context.Context, uuid string) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Table("comments").Where("target_type = 'document'").Where("target_uuid = ?", uuid).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*Document)(nil)).Where("uuid = ?", uuid).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("Document")
		}
		return nil
	})
}

// ErrReportExists: the proposal already has a report and force was not given (docs/rules.md §5.8).
var ErrReportExists = errors.New("A report already exists for this proposal. Pass force=true to add another report to the same proposal.")

// ReportStatusError: the proposal is not approved (docs/rules.md §5.8).
type ReportStatusError struct{ Status string }

func (e *ReportStatusError) Error() string {
	return "Proposal status must be 'approved' to author a completion report (got '" + e.Status + "')"
}

// CreateReport adds a report document to an approved proposal in one transaction with the
// guard (docs/rules.md §5.8). For an idea-input proposal it also records "report_created", in the
// proposal's project, on its first input idea in that project, or on the proposal when none is,
// and notifies that idea's (or else the first input idea's) creator and assignee, and their
// owners for agents, who can see the proposal's project.
func (s *Store) CreateReport(ctx context.Context, c Caller, proposalUUID string, doc *Document, force bool) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var prior Document
		if err := tx.NewSelect().Model(&prior).Where("uuid = ?", doc.UUID).Scan(ctx); err == nil {
			*doc = prior // written by an earlier attempt of the same call
			return nil
		}
		// The guard reads the proposal and its reports, then writes: hold the proposal's row so
		// that a concurrent report (or revoke) waits for this one (mcp TestConcurrentGuardsHoldOnEveryDatabase).
		if err := lockRow(ctx, tx, "proposals", proposalUUID); err != nil {
			return err
		}
		var p Proposal
		if err := tx.NewSelect().Model(&p).Where("uuid = ?", proposalUUID).Scan(ctx); err != nil {
			return mapErr(err, "Proposal")
		}
		if p.Status != vocab.ProposalApproved {
			return &ReportStatusError{Status: string(p.Status)}
		}
		if !force {
			exists, err := tx.NewSelect().Model((*Document)(nil)).Where("proposal_uuid = ?", proposalUUID).
				Where("type = 'report'").Exists(ctx)
			if err != nil {
				return err
			}
			if exists {
				return ErrReportExists
			}
		}
		doc.ProjectUUID = p.ProjectUUID
		if _, err := tx.NewInsert().Model(doc).Exec(ctx); err != nil {
			return mapErr(err, "Document")
		}
		if p.InputType != "idea" || len(p.InputUUIDs) == 0 {
			return nil
		}
		var inputs []Idea
		if err := tx.NewSelect().Model(&inputs).Where("uuid IN (?)", bun.List(p.InputUUIDs)).Scan(ctx); err != nil {
			return err
		}
		// The idea announced on: the first input idea in the proposal's project, else the first
		// input idea still there (whose people are told, if they may see the proposal's project).
		var idea Idea
		found := false
		for _, same := range []bool{true, false} {
			for _, u := range p.InputUUIDs {
				k := slices.IndexFunc(inputs, func(i Idea) bool { return strings.EqualFold(i.UUID, u) && (!same || i.ProjectUUID == p.ProjectUUID) })
				if k >= 0 && !found {
					idea, found = inputs[k], true
				}
			}
		}
		if !found {
			return nil // the ideas are gone: there is nobody to tell
		}
		// Announced in the proposal's project only, where the report is (docs/rules.md §5.8, §6.3
		// "Across projects"): on that idea when it is there too, else on the proposal.
		var on struct{ typ, uuid, title, what string }
		if idea.ProjectUUID == p.ProjectUUID {
			on.typ, on.uuid, on.title, on.what = "idea", idea.UUID, idea.Title, "idea"
		} else {
			on.typ, on.uuid, on.title, on.what = "proposal", p.UUID, p.Title, "proposal"
		}
		now := Now()
		act := Activity{UUID: derivedID(doc.UUID, "report_created"), CompanyUUID: c.CompanyUUID, ProjectUUID: p.ProjectUUID, TargetType: on.typ,
			TargetUUID: on.uuid, ActorType: "agent", ActorUUID: c.AgentUUID, Action: "report_created", CreatedAt: now,
			Value: jsonValue(map[string]string{"reportUuid": doc.UUID, "proposalUuid": p.UUID, "reportTitle": doc.Title})}
		if _, err := tx.NewInsert().Model(&act).Exec(ctx); err != nil {
			return err
		}
		to := []Recipient{{Type: idea.CreatedByType, UUID: idea.CreatedByUUID}}
		if idea.CreatedByType == "agent" {
			to = append(to, OwnerOf(ctx, tx, idea.CreatedByUUID))
		}
		if idea.AssigneeUUID != nil && idea.AssigneeType != nil {
			typ := *idea.AssigneeType
			if typ == "agent_instance" {
				typ = "agent"
			}
			to = append(to, Recipient{Type: typ, UUID: *idea.AssigneeUUID})
			if typ == "agent" {
				to = append(to, OwnerOf(ctx, tx, *idea.AssigneeUUID))
			}
		}
		return InsertNotifications(ctx, tx, c.CompanyUUID, NotifySpec{Seed: act.UUID, ProjectUUID: p.ProjectUUID,
			Action: "report_created", EntityType: on.typ, EntityUUID: on.uuid, EntityTitle: on.title,
			Message:   c.AgentName + " generated a new report on " + on.what + " \"" + on.title + "\"",
			ActorType: "agent", ActorUUID: c.AgentUUID, ActorName: c.AgentName, Recipients: to})
	})
}

func jsonValue(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// IdeaFacts are what proposal guards and validation read about an input idea.
type IdeaFacts struct {
	UUID              string
	Title             string
	Found             bool
	ProjectUUID       string
	IsContainer       bool
	AssigneeType      *string
	AssigneeUUID      *string
	ElaborationStatus *string
}

// LoadIdeaFacts reads ideas of the company in the given order; missing ones have Found=false.
func (s *Store) LoadIdeaFacts(ctx context.Context, companyUUID string, uuids []string) ([]IdeaFacts, error) {
	out := make([]IdeaFacts, len(uuids))
	var ideas []Idea
	var valid []string
	for _, u := range uuids {
		if vocab.IsUUID(u) {
			valid = append(valid, u)
		}
	}
	if len(valid) > 0 {
		err := s.DB.NewSelect().Model(&ideas).Where("company_uuid = ?", companyUUID).Where("uuid IN (?)", bun.List(valid)).Scan(ctx)
		if err != nil {
			return nil, err
		}
	}
	for i, id := range uuids {
		out[i] = IdeaFacts{UUID: id}
		for _, x := range ideas {
			if x.UUID == id {
				out[i] = IdeaFacts{UUID: id, Title: x.Title, Found: true, ProjectUUID: x.ProjectUUID, IsContainer: x.IsContainer,
					AssigneeType: x.AssigneeType, AssigneeUUID: x.AssigneeUUID, ElaborationStatus: x.ElaborationStatus}
			}
		}
	}
	return out, nil
}

// PendingProposals returns a page of the company's pending proposals (docs/rules.md §2.3: waiting
// for review) in the projects the caller can see (§6.3), newest first, the total, and the names of
// the page's projects by uuid. The console's review queue reads it.
func (s *Store) PendingProposals(ctx context.Context, c Caller, limit, offset int) ([]Proposal, map[string]string, int, error) {
	var rows []Proposal
	total, err := s.DB.NewSelect().Model(&rows).Where("company_uuid = ?", c.CompanyUUID).
		Where("status = ?", vocab.ProposalPending).Where("project_uuid IN (?)", s.visibleProjectIDs(c)).
		Order("created_at DESC", "uuid DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	names := map[string]string{}
	var ids []string
	for _, p := range rows {
		if _, ok := names[p.ProjectUUID]; !ok {
			names[p.ProjectUUID] = ""
			ids = append(ids, p.ProjectUUID)
		}
	}
	if len(ids) > 0 {
		var projects []Project
		if err := s.DB.NewSelect().Model(&projects).Column("uuid", "name").Where("uuid IN (?)", bun.List(ids)).Scan(ctx); err != nil {
			return nil, nil, 0, err
		}
		for _, p := range projects {
			names[p.UUID] = p.Name
		}
	}
	return rows, names, int(total), nil
}
