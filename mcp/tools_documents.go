package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
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
		page, size, offset := in.window(20)
		docs, total, err := d.app().ListDocuments(ctx, call.Request, string(in.ProjectUUID), in.Type, size, offset)
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
		return documentOut(ctx, d)(d.app().GetDocument(ctx, call.Request, string(in.DocumentUUID)))
	},
}

// documentOut turns a document use case's answer into the tool's.
func documentOut(ctx context.Context, d *Deps) func(app.DocumentRecord, error) (DocumentView, error) {
	return func(rec app.DocumentRecord, err error) (DocumentView, error) {
		if err != nil {
			return DocumentView{}, err
		}
		return documentView(ctx, d.Store.NewNamer(), rec.Document, rec.ProjectName), nil
	}
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
		return documentOut(ctx, d)(d.app().CreateDocument(ctx, call.Request, app.CreateDocumentInput{
			ProjectUUID: string(in.ProjectUUID), Type: in.Type, Title: in.Title, Content: in.Content,
			ProposalUUID: (*string)(in.ProposalUUID)}))
	},
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
		return documentOut(ctx, d)(d.app().UpdateDocument(ctx, call.Request, app.UpdateDocumentInput{
			DocumentUUID: string(in.DocumentUUID), Title: in.Title, Content: in.Content}))
	},
}

var adminDeleteDocument = tool[DocumentIn, textResult]{
	Name: "chorus_admin_delete_document", Title: "Delete a document", Toolset: tsCollab, Perm: perm.DocumentAdmin, Effect: destroys,
	Desc: "Delete a document and its comments.",
	Run: func(ctx context.Context, d *Deps, call *Call, in DocumentIn) (textResult, error) {
		if err := d.app().DeleteDocument(ctx, call.Request, string(in.DocumentUUID)); err != nil {
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
		doc, err := d.app().CreateReport(ctx, call.Request, app.CreateReportInput{ProposalUUID: string(in.ProposalUUID),
			Title: in.Title, Content: in.Content, Force: in.Force})
		if err != nil {
			return CreatedReport{}, err
		}
		return CreatedReport{DocumentUUID: doc.UUID, ProjectUUID: doc.ProjectUUID, Version: 1}, nil
	},
}
