package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Document use cases (docs/rules.md §4.7, §5.8). Documents are records: plain store
// transactions, no workflow.

// DocumentRecord is a document as read back or written, with its project's name.
type DocumentRecord struct {
	Document    store.Document
	ProjectName string
}

// ListDocuments is a page of a project's documents, most recently updated first, and how many
// there are.
func (a *App) ListDocuments(ctx context.Context, r Request, projectUUID, typ string, size, offset int) ([]store.Document, int, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.ListDocuments(ctx, projectUUID, typ, size, offset)
}

// GetDocument reads a document the caller can see.
func (a *App) GetDocument(ctx context.Context, r Request, documentUUID string) (DocumentRecord, error) {
	doc, pv, err := a.Store.DocumentAccess(ctx, r.Who.Caller, documentUUID, store.AccessViewer)
	if err != nil {
		return DocumentRecord{}, err
	}
	return DocumentRecord{Document: *doc, ProjectName: pv.Name}, nil
}

// CreateDocumentInput is a new document of a project, optionally of one of its proposals.
type CreateDocumentInput struct {
	ProjectUUID  string
	Type         string
	Title        string
	Content      *string
	ProposalUUID *string
}

// CreateDocument creates a document (version 1) in a project the caller edits.
func (a *App) CreateDocument(ctx context.Context, r Request, in CreateDocumentInput) (DocumentRecord, error) {
	if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
		return DocumentRecord{}, err
	}
	pv, err := a.Store.RequireProject(ctx, r.Who.Caller, in.ProjectUUID, store.AccessEditor)
	if err != nil {
		return DocumentRecord{}, err
	}
	if in.ProposalUUID != nil {
		p, _, err := a.Store.ProposalAccess(ctx, r.Who.Caller, *in.ProposalUUID, store.AccessViewer)
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrForbidden) {
			return DocumentRecord{}, err // an outage is not "not found"
		}
		if err != nil || p.ProjectUUID != in.ProjectUUID {
			return DocumentRecord{}, store.NotFound("Proposal")
		}
	}
	content := in.Content
	if content != nil && *content == "" {
		content = nil
	}
	now := store.Now()
	doc := store.Document{UUID: r.NewID("document"), CompanyUUID: r.Who.Caller.CompanyUUID, ProjectUUID: in.ProjectUUID,
		Type: in.Type, Title: strings.TrimSpace(in.Title), Content: content, Version: 1, ProposalUUID: in.ProposalUUID,
		CreatedByType: r.Who.Caller.Kind(), CreatedByUUID: r.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now}
	if err := a.Store.CreateDocument(ctx, &doc); err != nil {
		return DocumentRecord{}, err
	}
	return DocumentRecord{Document: doc, ProjectName: pv.Name}, nil
}

// UpdateDocumentInput changes a document; nil fields keep their value.
type UpdateDocumentInput struct {
	DocumentUUID string
	Title        *string
	Content      *string
}

// UpdateDocument changes a document's title or content; its version goes up by one. With a
// requestId the change id derives from it, so a retry changes nothing twice.
func (a *App) UpdateDocument(ctx context.Context, r Request, in UpdateDocumentInput) (DocumentRecord, error) {
	if err := workflows.CheckTitle("", "title", in.Title); err != nil {
		return DocumentRecord{}, err
	}
	_, pv, err := a.Store.DocumentAccess(ctx, r.Who.Caller, in.DocumentUUID, store.AccessEditor)
	if err != nil {
		return DocumentRecord{}, err
	}
	changeID := store.NewUUID()
	if r.RequestID != "" {
		changeID = fmt.Sprintf("%s/%s/%s/%d", "chorus_pm_update_document", r.Who.Caller.AgentUUID, r.RequestID, r.Generation)
	}
	doc, err := a.Store.UpdateDocument(ctx, in.DocumentUUID, in.Title, in.Content, changeID)
	if err != nil {
		return DocumentRecord{}, err
	}
	return DocumentRecord{Document: *doc, ProjectName: pv.Name}, nil
}

// DeleteDocument deletes a document and its comments.
func (a *App) DeleteDocument(ctx context.Context, r Request, documentUUID string) error {
	if _, _, err := a.Store.DocumentAccess(ctx, r.Who.Caller, documentUUID, store.AccessEditor); err != nil {
		return err
	}
	return a.Store.DeleteDocument(ctx, documentUUID)
}

// CreateReportInput is the completion report of an approved proposal.
type CreateReportInput struct {
	ProposalUUID string
	Title        string
	Content      string
	// Force writes another report when the proposal has one.
	Force bool
}

// CreateReport writes the completion report of an approved proposal, one per proposal unless
// Force, and returns it.
func (a *App) CreateReport(ctx context.Context, r Request, in CreateReportInput) (store.Document, error) {
	if !vocab.IsUUID(in.ProposalUUID) {
		return store.Document{}, Refuse(vocab.RefusedInvalid, "Input validation error: proposalUuid must be a UUID")
	}
	if _, err := a.proposalAccess(ctx, r, in.ProposalUUID); err != nil {
		return store.Document{}, err
	}
	now := store.Now()
	doc := store.Document{UUID: r.NewID("report"), CompanyUUID: r.Who.Caller.CompanyUUID, Type: "report",
		Title: in.Title, Content: &in.Content, Version: 1, ProposalUUID: &in.ProposalUUID, CreatedByType: r.Who.Caller.Kind(),
		CreatedByUUID: r.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now}
	err := a.Store.CreateReport(ctx, r.Who.Caller, in.ProposalUUID, &doc, in.Force)
	var status *store.ReportStatusError
	switch {
	case errors.As(err, &status):
		return store.Document{}, Refuse(vocab.RefusedPrecondition, "%s", status.Error())
	case errors.Is(err, store.ErrReportExists):
		return store.Document{}, Refuse(vocab.RefusedPrecondition, "%s", store.ErrReportExists.Error())
	case err != nil:
		return store.Document{}, err
	}
	return doc, nil
}
