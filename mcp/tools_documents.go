package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Document tools (docs/rules.md §4.7, §5.8). Documents are records: plain
// store transactions, no workflow.

// DocumentIn names a document.
type DocumentIn struct {
	DocumentUUID UUID `json:"documentUuid"`
}

// GetDocumentsIn is chorus_get_documents' input.
type GetDocumentsIn struct {
	ProjectUUID UUID   `json:"projectUuid"`
	Type        string `json:"type,omitempty" chorus:"enum=prd|tech_design|adr|spec|guide|report"`
	PageIn
}

// DocumentRow is one row of chorus_get_documents.
type DocumentRow struct {
	UUID         string    `json:"uuid"`
	Title        string    `json:"title"`
	Type         string    `json:"type"`
	Version      int       `json:"version"`
	ProposalUUID *string   `json:"proposalUuid"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// DocumentList is chorus_get_documents' result.
type DocumentList struct {
	Documents []DocumentRow `json:"documents"`
	Meta
}

var getDocuments = tool[GetDocumentsIn, DocumentList]{
	Name: "chorus_get_documents", Title: "List documents", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "List a project's documents, most recently updated first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetDocumentsIn) (DocumentList, error) {
		if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessViewer); err != nil {
			return DocumentList{}, err
		}
		page, size, offset := in.window(20)
		docs, total, err := d.Store.ListDocuments(ctx, string(in.ProjectUUID), in.Type, size, offset)
		if err != nil {
			return DocumentList{}, err
		}
		rows := make([]DocumentRow, len(docs))
		for i, x := range docs {
			rows[i] = DocumentRow{UUID: x.UUID, Title: clip(x.Title), Type: x.Type, Version: x.Version,
				ProposalUUID: x.ProposalUUID, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
		}
		wrap := func(r []DocumentRow) any {
			return DocumentList{Documents: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(DocumentList), nil
	},
}

var getDocument = tool[DocumentIn, DocumentView]{
	Name: "chorus_get_document", Title: "Get a document", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "Get a document with its content and version.",
	Run: func(ctx context.Context, d *Deps, call *Call, in DocumentIn) (DocumentView, error) {
		doc, pv, err := d.Store.DocumentAccess(ctx, call.Who.Caller, string(in.DocumentUUID), store.AccessViewer)
		if err != nil {
			return DocumentView{}, err
		}
		return documentView(ctx, d.Store.NewNamer(), *doc, pv.Name), nil
	},
}

// CreateDocumentIn is chorus_pm_create_document's input.
type CreateDocumentIn struct {
	ProjectUUID  UUID    `json:"projectUuid"`
	Type         string  `json:"type" chorus:"enum=prd|tech_design|adr|spec|guide"`
	Title        string  `json:"title" chorus:"minLength=1"`
	Content      *string `json:"content,omitempty"`
	ProposalUUID *UUID   `json:"proposalUuid,omitempty"`
}

var pmCreateDocument = tool[CreateDocumentIn, DocumentView]{
	Name: "chorus_pm_create_document", Title: "Create a document", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes,
	Desc: "Create a document in a project, optionally of a proposal (reports: chorus_create_report).",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateDocumentIn) (DocumentView, error) {
		if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
			return DocumentView{}, err
		}
		pv, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessEditor)
		if err != nil {
			return DocumentView{}, err
		}
		if in.ProposalUUID != nil {
			p, _, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(*in.ProposalUUID), store.AccessViewer)
			if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrForbidden) {
				return DocumentView{}, err // an outage is not "not found"
			}
			if err != nil || p.ProjectUUID != string(in.ProjectUUID) {
				return DocumentView{}, store.NotFound("Proposal")
			}
		}
		now := store.Now()
		doc := store.Document{UUID: call.newID("document"), CompanyUUID: call.Who.Caller.CompanyUUID, ProjectUUID: string(in.ProjectUUID),
			Type: in.Type, Title: strings.TrimSpace(in.Title), Content: nonEmpty(in.Content), Version: 1,
			ProposalUUID: (*string)(in.ProposalUUID), CreatedByType: "agent", CreatedByUUID: call.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now}
		if err := d.Store.CreateDocument(ctx, &doc); err != nil {
			return DocumentView{}, err
		}
		return documentView(ctx, d.Store.NewNamer(), doc, pv.Name), nil
	},
}

func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// UpdateDocumentIn is chorus_pm_update_document's input.
type UpdateDocumentIn struct {
	DocumentUUID UUID    `json:"documentUuid"`
	Title        *string `json:"title,omitempty"`
	Content      *string `json:"content,omitempty"`
}

var pmUpdateDocument = tool[UpdateDocumentIn, DocumentView]{
	Name: "chorus_pm_update_document", Title: "Update a document", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes,
	Desc: "Change a document's title or content; its version goes up by one.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateDocumentIn) (DocumentView, error) {
		if err := workflows.CheckTitle("", "title", in.Title); err != nil {
			return DocumentView{}, err
		}
		_, pv, err := d.Store.DocumentAccess(ctx, call.Who.Caller, string(in.DocumentUUID), store.AccessEditor)
		if err != nil {
			return DocumentView{}, err
		}
		changeID := store.NewUUID()
		if call.RequestID != "" {
			changeID = fmt.Sprintf("%s/%s/%s/%d", "chorus_pm_update_document", call.Who.Caller.AgentUUID, call.RequestID, call.Generation)
		}
		doc, err := d.Store.UpdateDocument(ctx, string(in.DocumentUUID), in.Title, in.Content, changeID)
		if err != nil {
			return DocumentView{}, err
		}
		return documentView(ctx, d.Store.NewNamer(), *doc, pv.Name), nil
	},
}

var adminDeleteDocument = tool[DocumentIn, textResult]{
	Name: "chorus_admin_delete_document", Title: "Delete a document", Toolset: tsCollab, Perm: perm.DocumentAdmin, Effect: destroys,
	Desc: "Delete a document and its comments.",
	Run: func(ctx context.Context, d *Deps, call *Call, in DocumentIn) (textResult, error) {
		if _, _, err := d.Store.DocumentAccess(ctx, call.Who.Caller, string(in.DocumentUUID), store.AccessEditor); err != nil {
			return "", err
		}
		if err := d.Store.DeleteDocument(ctx, string(in.DocumentUUID)); err != nil {
			return "", err
		}
		return textResult(fmt.Sprintf("Document %s deleted", in.DocumentUUID)), nil
	},
}

// CreateReportIn is chorus_create_report's input.
type CreateReportIn struct {
	ProposalUUID UUID   `json:"proposalUuid"`
	Title        string `json:"title" chorus:"minLength=1;maxLength=200"`
	Content      string `json:"content" chorus:"minLength=1"`
	Force        bool   `json:"force,omitempty"`
}

// CreatedReport is chorus_create_report's result.
type CreatedReport struct {
	DocumentUUID string `json:"documentUuid"`
	ProjectUUID  string `json:"projectUuid"`
	Version      int    `json:"version"`
}

var createReport = tool[CreateReportIn, CreatedReport]{
	Name: "chorus_create_report", Title: "Write a report", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes,
	Desc: "Write the completion report of an approved proposal; one per proposal unless force.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateReportIn) (CreatedReport, error) {
		if !store.IsUUID(string(in.ProposalUUID)) {
			return CreatedReport{}, invalid("proposalUuid must be a UUID")
		}
		if _, _, err := proposalAccess(ctx, d, call, string(in.ProposalUUID)); err != nil {
			return CreatedReport{}, err
		}
		now := store.Now()
		doc := store.Document{UUID: call.newID("report"), CompanyUUID: call.Who.Caller.CompanyUUID, Type: "report",
			Title: in.Title, Content: &in.Content, Version: 1, ProposalUUID: (*string)(&in.ProposalUUID), CreatedByType: "agent",
			CreatedByUUID: call.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now}
		err := d.Store.CreateReport(ctx, call.Who.Caller, string(in.ProposalUUID), &doc, in.Force)
		var status *store.ReportStatusError
		switch {
		case errors.As(err, &status):
			return CreatedReport{}, refuse("%s", status.Error())
		case errors.Is(err, store.ErrReportExists):
			return CreatedReport{}, refuse("%s", store.ErrReportExists.Error())
		case err != nil:
			return CreatedReport{}, err
		}
		return CreatedReport{DocumentUUID: doc.UUID, ProjectUUID: doc.ProjectUUID, Version: 1}, nil
	},
}
