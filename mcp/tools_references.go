package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Reference tools and inline references (docs/rules.md §4.12, §1.16). References are records:
// plain store transactions, no workflow. Their ids are derived (from the requestId, or from the
// created entity and the reference's position), so a retried call adds nothing twice.

// referenceTypes are the kinds of reference (docs/rules.md §1.16).
var referenceTypes = []string{"docs", "repo", "issue_pr", "paper_blog"}

// checkReferenceType returns the refusal text for a type that is not a reference type.
func checkReferenceType(t string) string {
	if slices.Contains(referenceTypes, t) {
		return ""
	}
	return fmt.Sprintf("Invalid reference type: %s. Use one of docs, repo, issue_pr, paper_blog.", clipped(t))
}

// checkReferenceURL returns the url as stored (trimmed) and the refusal text for one that is not
// a full http(s) address.
func checkReferenceURL(raw string) (string, string) {
	u := strings.TrimSpace(raw)
	lower := strings.ToLower(u)
	parsed, err := url.Parse(u)
	if (!strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://")) || err != nil || parsed.Host == "" {
		return u, fmt.Sprintf("Invalid reference url: %s. Give a full address starting with http:// or https://.", clipped(raw))
	}
	return u, ""
}

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

// addInlineReferences validates the inline references given with a create and stores the valid
// ones on target, fail-soft: the entity exists whatever happens here, and each reference not
// added is reported, never dropped silently. Reference ids derive from the target and the
// position, so a retry of the create (same requestId, so same target) adds nothing twice. An
// outage is returned as an error, so the call's retry completes the references.
func addInlineReferences(ctx context.Context, d *Deps, call *Call, target store.Target, in []ReferenceIn, task *string) ([]ReferenceError, error) {
	var errs []ReferenceError
	var refs []store.Reference
	var indexes []int
	now := store.Now()
	for i, r := range in {
		fail := func(msg string) {
			errs = append(errs, ReferenceError{Task: task, Index: i, URL: r.URL, Title: r.Title, Error: msg})
		}
		u, bad := checkReferenceURL(r.URL)
		switch {
		case checkReferenceType(r.Type) != "":
			fail(checkReferenceType(r.Type))
			continue
		case bad != "":
			fail(bad)
			continue
		case strings.TrimSpace(r.Title) == "":
			fail("Reference title must not be blank: say what the link is.")
			continue
		}
		id := workflows.DerivedUUID("inline-reference", target.Type, target.UUID, strconv.Itoa(i))
		at := now.Add(time.Duration(i) * time.Microsecond) // read back oldest first: in input order
		refs = append(refs, store.Reference{UUID: id, CompanyUUID: call.Who.Caller.CompanyUUID, TargetType: target.Type,
			TargetUUID: target.UUID, Type: r.Type, URL: u, Title: strings.TrimSpace(r.Title), Notes: r.Notes,
			CreatedByType: "agent", CreatedByUUID: call.Who.Caller.AgentUUID, CreatedAt: at, UpdatedAt: at,
			ActivityUUID: workflows.DerivedUUID("reference_added", id)})
		indexes = append(indexes, i)
	}
	if len(refs) == 0 {
		return errs, nil
	}
	_, err := d.Store.AddReferences(ctx, target, refs)
	var full *store.TooManyReferencesError
	switch {
	case errors.Is(err, store.ErrNotFound): // the entity was deleted right after it was created
		for j, r := range refs {
			errs = append(errs, ReferenceError{Task: task, Index: indexes[j], URL: r.URL, Title: r.Title,
				Error: fmt.Sprintf("The %s was deleted before its references were added.", target.Type)})
		}
		err = nil
	case errors.As(err, &full): // not from a create's 50, but said as it is
		for j, r := range refs {
			errs = append(errs, ReferenceError{Task: task, Index: indexes[j], URL: r.URL, Title: r.Title, Error: full.Error()})
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(errs, func(a, b ReferenceError) int { return a.Index - b.Index })
	return errs, nil
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
		const prefix = "Failed to add reference: "
		target, err := d.Store.TargetAccess(ctx, call.Who.Caller, in.TargetType, string(in.TargetUUID), store.AccessEditor)
		if errors.Is(err, store.ErrNotFound) {
			return ReferenceView{}, refuseAs("not_found", "%sTarget %s with UUID %s not found", prefix, in.TargetType, in.TargetUUID)
		}
		if err != nil {
			return ReferenceView{}, err
		}
		if msg := checkReferenceType(in.Type); msg != "" {
			return ReferenceView{}, refuseAs("invalid_input", "%s%s", prefix, msg)
		}
		u, msg := checkReferenceURL(in.URL)
		if msg != "" {
			return ReferenceView{}, refuseAs("invalid_input", "%s%s", prefix, msg)
		}
		if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
			return ReferenceView{}, err
		}
		now := store.Now()
		id := call.newID("reference")
		rows, err := d.Store.AddReferences(ctx, *target, []store.Reference{{UUID: id, CompanyUUID: call.Who.Caller.CompanyUUID,
			TargetType: target.Type, TargetUUID: target.UUID, Type: in.Type, URL: u, Title: strings.TrimSpace(in.Title),
			Notes: in.Notes, CreatedByType: "agent", CreatedByUUID: call.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now,
			ActivityUUID: workflows.DerivedUUID("reference_added", id)}})
		if errors.Is(err, store.ErrNotFound) {
			return ReferenceView{}, refuseAs("not_found", "%sTarget %s with UUID %s not found", prefix, in.TargetType, in.TargetUUID)
		}
		var full *store.TooManyReferencesError
		if errors.As(err, &full) {
			return ReferenceView{}, refuse("%s%s", prefix, full.Error())
		}
		if err != nil {
			return ReferenceView{}, err
		}
		return referenceView(ctx, d.Store.NewNamer(), rows[0]), nil
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
		if _, err := d.Store.TargetAccess(ctx, call.Who.Caller, in.TargetType, string(in.TargetUUID), store.AccessViewer); err != nil {
			return ReferenceList{}, err
		}
		page, size, offset := in.window(20)
		rs, total, err := d.Store.References(ctx, in.TargetType, string(in.TargetUUID), size, offset)
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

// referenceAccess gates a reference by its target's project (docs/rules.md §6.3); a reference that
// does not exist or whose target is hidden gets the tool's own not-found text.
func referenceAccess(ctx context.Context, d *Deps, call *Call, id, prefix string) (*store.Reference, error) {
	r, _, err := d.Store.ReferenceAccess(ctx, call.Who.Caller, id, store.AccessEditor)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuseAs("not_found", "%sReference with UUID %s not found", prefix, id)
	}
	return r, err
}

var updateReference = tool[UpdateReferenceIn, ReferenceView]{
	Name: "chorus_update_reference", Title: "Update a reference", Toolset: tsCollab, Perm: perm.DocumentWrite, Effect: writes, Idempotent: true,
	Desc: "Change a reference's type, url, title or notes.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateReferenceIn) (ReferenceView, error) {
		const prefix = "Failed to update reference: "
		if in.Type == nil && in.URL == nil && in.Title == nil && in.Notes == nil && !in.ClearNotes {
			return ReferenceView{}, invalid("provide at least one of type, url, title, notes or clearNotes to change")
		}
		if in.Notes != nil && in.ClearNotes {
			return ReferenceView{}, invalid("give notes (new notes) or clearNotes (no notes), not both")
		}
		if _, err := referenceAccess(ctx, d, call, string(in.UUID), prefix); err != nil {
			return ReferenceView{}, err
		}
		e := store.ReferenceEdit{Type: in.Type, Notes: in.Notes, ClearNotes: in.ClearNotes}
		if in.Type != nil {
			if msg := checkReferenceType(*in.Type); msg != "" {
				return ReferenceView{}, refuseAs("invalid_input", "%s%s", prefix, msg)
			}
		}
		if in.URL != nil {
			u, msg := checkReferenceURL(*in.URL)
			if msg != "" {
				return ReferenceView{}, refuseAs("invalid_input", "%s%s", prefix, msg)
			}
			e.URL = &u
		}
		if err := workflows.CheckTitle("", "title", in.Title); err != nil {
			return ReferenceView{}, err
		}
		if in.Title != nil {
			t := strings.TrimSpace(*in.Title)
			e.Title = &t
		}
		r, err := d.Store.UpdateReference(ctx, string(in.UUID), e)
		if errors.Is(err, store.ErrNotFound) {
			return ReferenceView{}, refuseAs("not_found", "%sReference with UUID %s not found", prefix, in.UUID)
		}
		if err != nil {
			return ReferenceView{}, err
		}
		return referenceView(ctx, d.Store.NewNamer(), *r), nil
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
		const prefix = "Failed to remove reference: "
		if _, err := referenceAccess(ctx, d, call, string(in.UUID), prefix); err != nil {
			return RemovedReference{}, err
		}
		err := d.Store.RemoveReference(ctx, string(in.UUID))
		if errors.Is(err, store.ErrNotFound) {
			return RemovedReference{}, refuseAs("not_found", "%sReference with UUID %s not found", prefix, in.UUID)
		}
		if err != nil {
			return RemovedReference{}, err
		}
		return RemovedReference{UUID: string(in.UUID), Action: "reference_removed"}, nil
	},
}
