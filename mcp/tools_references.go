package mcp

import (
	"context"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
)

// Reference tools and inline references (docs/rules.md §4.12, §1.16). References are records:
// plain store transactions, no workflow. Their ids are derived (from the requestId, or from the
// created entity and the reference's position), so a retried call adds nothing twice.

// ReferenceIn is one inline reference of a create tool.
type ReferenceIn struct {
	Type  string  `json:"type" jsonschema:"docs, repo, issue_pr or paper_blog" chorus:"maxLength=64"`
	URL   string  `json:"url" chorus:"maxLength=2048"`
	Title string  `json:"title"`
	Notes *string `json:"notes,omitempty"`
}

// ReferenceError reports an inline reference that was not added, and why; the entity it was
// meant for was created anyway (docs/rules.md §4.12).
type ReferenceError struct {
	Task  *string `json:"task,omitempty" jsonschema:"chorus_create_tasks: the title of the task the reference was given with"`
	Index int     `json:"index" jsonschema:"the reference's position in its references list, from 0"`
	URL   string  `json:"url"`
	Title string  `json:"title"`
	Error string  `json:"error" jsonschema:"what is wrong and how to fix it; add the corrected reference with chorus_add_reference"`
}

// referenceInputs are a tool's inline references as app takes them.
func referenceInputs(in []ReferenceIn) []app.ReferenceInput {
	out := make([]app.ReferenceInput, len(in))
	for i, r := range in {
		out[i] = app.ReferenceInput{Type: r.Type, URL: r.URL, Title: r.Title, Notes: r.Notes}
	}
	return out
}

func referenceErrors(errs []app.ReferenceError) []ReferenceError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]ReferenceError, len(errs))
	for i, e := range errs {
		out[i] = ReferenceError{Task: e.Task, Index: e.Index, URL: e.URL, Title: e.Title, Error: e.Error}
	}
	return out
}

// AddReferenceIn is chorus_add_reference's input.
type AddReferenceIn struct {
	TargetType string  `json:"targetType" chorus:"enum=idea|proposal|task"`
	TargetUUID UUID    `json:"targetUuid"`
	Type       string  `json:"type" jsonschema:"docs, repo, issue_pr or paper_blog" chorus:"maxLength=64"`
	URL        string  `json:"url" chorus:"maxLength=2048"`
	Title      string  `json:"title"`
	Notes      *string `json:"notes,omitempty"`
}

var addReference = tool[AddReferenceIn, ReferenceView]{
	Name: "chorus_add_reference", Title: "Add a reference", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes,
	Desc: "Attach a link to an idea, proposal or task. Chorus never fetches it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddReferenceIn) (ReferenceView, error) {
		ref, err := d.app().AddReference(ctx, call.Request, app.AddReferenceInput{TargetType: in.TargetType,
			TargetUUID: string(in.TargetUUID), ReferenceInput: app.ReferenceInput{Type: in.Type, URL: in.URL, Title: in.Title, Notes: in.Notes}})
		if err != nil {
			return ReferenceView{}, err
		}
		return referenceView(ctx, d.Store.NewNamer(), ref), nil
	},
}

// GetReferencesIn is chorus_get_references' input.
type GetReferencesIn struct {
	TargetType string `json:"targetType" chorus:"enum=idea|proposal|task"`
	TargetUUID UUID   `json:"targetUuid"`
	PageIn
}

// ReferenceList is chorus_get_references' result.
type ReferenceList struct {
	References []ReferenceView `json:"references"`
	Meta
}

var getReferences = tool[GetReferencesIn, ReferenceList]{
	Name: "chorus_get_references", Title: "List references", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "List all references of an idea, proposal or task, oldest first, paged.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetReferencesIn) (ReferenceList, error) {
		page, size, offset := in.window(20)
		rs, total, err := d.app().ListReferences(ctx, call.Request, in.TargetType, string(in.TargetUUID), size, offset)
		if err != nil {
			return ReferenceList{}, err
		}
		n := d.Store.NewNamer()
		n.Prefetch(ctx, referenceAuthors(rs)...)
		rows := referenceViews(ctx, n, rs)
		for i := range rows {
			rows[i].Title = clip(rows[i].Title)
		}
		wrap := func(r []ReferenceView) any {
			return ReferenceList{References: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(ReferenceList), nil
	},
}

// UpdateReferenceIn is chorus_update_reference's input.
type UpdateReferenceIn struct {
	UUID       UUID    `json:"uuid"`
	Type       *string `json:"type,omitempty" jsonschema:"docs, repo, issue_pr or paper_blog" chorus:"maxLength=64"`
	URL        *string `json:"url,omitempty" chorus:"maxLength=2048"`
	Title      *string `json:"title,omitempty"`
	Notes      *string `json:"notes,omitempty"`
	ClearNotes bool    `json:"clearNotes,omitempty" jsonschema:"true: remove the notes"`
}

var updateReference = tool[UpdateReferenceIn, ReferenceView]{
	Name: "chorus_update_reference", Title: "Update a reference", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes, Idempotent: true,
	Desc: "Change a reference's type, url, title or notes.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateReferenceIn) (ReferenceView, error) {
		r, err := d.app().UpdateReference(ctx, call.Request, app.UpdateReferenceInput{UUID: string(in.UUID), Type: in.Type,
			URL: in.URL, Title: in.Title, Notes: in.Notes, ClearNotes: in.ClearNotes})
		if err != nil {
			return ReferenceView{}, err
		}
		return referenceView(ctx, d.Store.NewNamer(), r), nil
	},
}

// ReferenceUUIDIn names a reference.
type ReferenceUUIDIn struct {
	UUID UUID `json:"uuid"`
}

// RemovedReference is chorus_remove_reference's result.
type RemovedReference struct {
	UUID   string `json:"uuid"`
	Action string `json:"action"`
}

var removeReference = tool[ReferenceUUIDIn, RemovedReference]{
	Name: "chorus_remove_reference", Title: "Remove a reference", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: destroys,
	Desc: "Remove a reference from its idea, proposal or task.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReferenceUUIDIn) (RemovedReference, error) {
		if err := d.app().RemoveReference(ctx, call.Request, string(in.UUID)); err != nil {
			return RemovedReference{}, err
		}
		return RemovedReference{UUID: string(in.UUID), Action: "reference_removed"}, nil
	},
}
