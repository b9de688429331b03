package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// References (docs/rules.md §4.12, §1.16) are records: plain store transactions, no workflow.
// Their ids are derived (from the requestId, or from the created entity and the reference's
// position), so a retried call adds nothing twice.

// referenceTypes are the kinds of reference (docs/rules.md §1.16).
var referenceTypes = []string{"docs", "repo", "issue_pr", "paper_blog"}

// checkReferenceType returns the refusal text for a type that is not a reference type.
func checkReferenceType(t string) string {
	if slices.Contains(referenceTypes, t) {
		return ""
	}
	return fmt.Sprintf("Invalid reference type: %s. Use one of docs, repo, issue_pr, paper_blog.", clippedValue(t))
}

// checkReferenceURL returns the url as stored (trimmed) and the refusal text for one that is not
// a full http(s) address.
func checkReferenceURL(raw string) (string, string) {
	u := strings.TrimSpace(raw)
	lower := strings.ToLower(u)
	parsed, err := url.Parse(u)
	if (!strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://")) || err != nil || parsed.Host == "" {
		return u, fmt.Sprintf("Invalid reference url: %s. Give a full address starting with http:// or https://.", clippedValue(raw))
	}
	return u, ""
}

// clippedValue shortens a caller's value quoted in a refusal (as mcp's input checks do).
func clippedValue(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// ReferenceInput is one reference to attach: an inline reference of a create, or
// chorus_add_reference's.
type ReferenceInput struct {
	Type  string
	URL   string
	Title string
	Notes *string
}

// ReferenceError reports an inline reference that was not added, and why; the entity it was
// meant for was created anyway (docs/rules.md §4.12).
type ReferenceError struct {
	// Task is the title of the task the reference was given with (chorus_create_tasks), or nil.
	Task  *string
	Index int
	URL   string
	Title string
	Error string
}

// AddInlineReferences validates the inline references given with a create and stores the valid
// ones on target, fail-soft: the entity exists whatever happens here, and each reference not
// added is reported, never dropped silently. Reference ids derive from the target and the
// position, so a retry of the create (same requestId, so same target) adds nothing twice. An
// outage is returned as an error, so the call's retry completes the references.
func (a *App) AddInlineReferences(ctx context.Context, r Request, target store.Target, in []ReferenceInput, task *string) ([]ReferenceError, error) {
	var errs []ReferenceError
	var refs []store.Reference
	var indexes []int
	now := store.Now()
	for i, ref := range in {
		msg := inlineReferenceProblem(ref)
		if msg != "" {
			errs = append(errs, ReferenceError{Task: task, Index: i, URL: ref.URL, Title: ref.Title, Error: msg})
			continue
		}
		u, _ := checkReferenceURL(ref.URL)
		id := vocab.DerivedUUID("inline-reference", target.Type, target.UUID, strconv.Itoa(i))
		at := now.Add(time.Duration(i) * time.Microsecond) // read back oldest first: in input order
		refs = append(refs, store.Reference{UUID: id, CompanyUUID: r.Who.Caller.CompanyUUID, TargetType: target.Type,
			TargetUUID: target.UUID, Type: ref.Type, URL: u, Title: strings.TrimSpace(ref.Title), Notes: ref.Notes,
			CreatedByType: r.Who.Caller.Kind(), CreatedByUUID: r.Who.Caller.AgentUUID, CreatedAt: at, UpdatedAt: at,
			ActivityUUID: vocab.DerivedUUID("reference_added", id)})
		indexes = append(indexes, i)
	}
	if len(refs) == 0 {
		return errs, nil
	}
	_, err := a.Store.AddReferences(ctx, target, refs)
	var full *store.TooManyReferencesError
	var why string
	switch {
	case errors.Is(err, store.ErrNotFound): // the entity was deleted right after it was created
		why = fmt.Sprintf("The %s was deleted before its references were added.", target.Type)
	case errors.As(err, &full): // not from a create's 50, but said as it is
		why = full.Error()
	case err != nil:
		return nil, err
	}
	if why != "" {
		for j, ref := range refs {
			errs = append(errs, ReferenceError{Task: task, Index: indexes[j], URL: ref.URL, Title: ref.Title, Error: why})
		}
	}
	slices.SortStableFunc(errs, func(a, b ReferenceError) int { return a.Index - b.Index })
	return errs, nil
}

// inlineReferenceProblem is why an inline reference cannot be added, or "".
func inlineReferenceProblem(ref ReferenceInput) string {
	if msg := checkReferenceType(ref.Type); msg != "" {
		return msg
	}
	if _, msg := checkReferenceURL(ref.URL); msg != "" {
		return msg
	}
	if strings.TrimSpace(ref.Title) == "" {
		return "Reference title must not be blank: say what the link is."
	}
	return ""
}

// AddReferenceInput is what chorus_add_reference attaches, and to what.
type AddReferenceInput struct {
	TargetType string
	TargetUUID string
	ReferenceInput
}

// AddReference attaches a link to an idea, proposal or task (editor on its project).
func (a *App) AddReference(ctx context.Context, r Request, in AddReferenceInput) (store.Reference, error) {
	const prefix = "Failed to add reference: "
	missing := func() error {
		return Refuse(vocab.RefusedNotFound, "%sTarget %s with UUID %s not found", prefix, in.TargetType, in.TargetUUID)
	}
	target, err := a.Store.TargetAccess(ctx, r.Who.Caller, in.TargetType, in.TargetUUID, store.AccessEditor)
	if errors.Is(err, store.ErrNotFound) {
		return store.Reference{}, missing()
	}
	if err != nil {
		return store.Reference{}, err
	}
	if msg := checkReferenceType(in.Type); msg != "" {
		return store.Reference{}, Refuse(vocab.RefusedInvalid, "%s%s", prefix, msg)
	}
	u, msg := checkReferenceURL(in.URL)
	if msg != "" {
		return store.Reference{}, Refuse(vocab.RefusedInvalid, "%s%s", prefix, msg)
	}
	if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
		return store.Reference{}, err
	}
	now := store.Now()
	id := r.NewID("reference")
	rows, err := a.Store.AddReferences(ctx, *target, []store.Reference{{UUID: id, CompanyUUID: r.Who.Caller.CompanyUUID,
		TargetType: target.Type, TargetUUID: target.UUID, Type: in.Type, URL: u, Title: strings.TrimSpace(in.Title),
		Notes: in.Notes, CreatedByType: r.Who.Caller.Kind(), CreatedByUUID: r.Who.Caller.AgentUUID, CreatedAt: now, UpdatedAt: now,
		ActivityUUID: vocab.DerivedUUID("reference_added", id)}})
	if errors.Is(err, store.ErrNotFound) {
		return store.Reference{}, missing()
	}
	var full *store.TooManyReferencesError
	if errors.As(err, &full) {
		return store.Reference{}, Refuse(vocab.RefusedPrecondition, "%s%s", prefix, full.Error())
	}
	if err != nil {
		return store.Reference{}, err
	}
	return rows[0], nil
}

// ListReferences is a page of a target's references, oldest first, and how many it has.
func (a *App) ListReferences(ctx context.Context, r Request, targetType, targetUUID string, size, offset int) ([]store.Reference, int, error) {
	if _, err := a.Store.TargetAccess(ctx, r.Who.Caller, targetType, targetUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.References(ctx, targetType, targetUUID, size, offset)
}

// UpdateReferenceInput is chorus_update_reference's change; nil fields keep their value.
type UpdateReferenceInput struct {
	UUID       string
	Type       *string
	URL        *string
	Title      *string
	Notes      *string
	ClearNotes bool
}

// referenceAccess gates a reference by its target's project (docs/rules.md §6.3); a reference that
// does not exist or whose target is hidden gets the use case's own not-found text.
func (a *App) referenceAccess(ctx context.Context, r Request, id, prefix string) (*store.Reference, error) {
	ref, _, err := a.Store.ReferenceAccess(ctx, r.Who.Caller, id, store.AccessEditor)
	if errors.Is(err, store.ErrNotFound) {
		return nil, referenceNotFound(prefix, id)
	}
	return ref, err
}

// UpdateReference changes a reference's type, url, title or notes.
func (a *App) UpdateReference(ctx context.Context, r Request, in UpdateReferenceInput) (store.Reference, error) {
	const prefix = "Failed to update reference: "
	if in.Type == nil && in.URL == nil && in.Title == nil && in.Notes == nil && !in.ClearNotes {
		return store.Reference{}, Refuse(vocab.RefusedInvalid,
			"Input validation error: provide at least one of type, url, title, notes or clearNotes to change")
	}
	if in.Notes != nil && in.ClearNotes {
		return store.Reference{}, Refuse(vocab.RefusedInvalid,
			"Input validation error: give notes (new notes) or clearNotes (no notes), not both")
	}
	if _, err := a.referenceAccess(ctx, r, in.UUID, prefix); err != nil {
		return store.Reference{}, err
	}
	e := store.ReferenceEdit{Type: in.Type, Notes: in.Notes, ClearNotes: in.ClearNotes}
	if in.Type != nil {
		if msg := checkReferenceType(*in.Type); msg != "" {
			return store.Reference{}, Refuse(vocab.RefusedInvalid, "%s%s", prefix, msg)
		}
	}
	if in.URL != nil {
		u, msg := checkReferenceURL(*in.URL)
		if msg != "" {
			return store.Reference{}, Refuse(vocab.RefusedInvalid, "%s%s", prefix, msg)
		}
		e.URL = &u
	}
	if err := workflows.CheckTitle("", "title", in.Title); err != nil {
		return store.Reference{}, err
	}
	if in.Title != nil {
		t := strings.TrimSpace(*in.Title)
		e.Title = &t
	}
	ref, err := a.Store.UpdateReference(ctx, in.UUID, e)
	if errors.Is(err, store.ErrNotFound) {
		return store.Reference{}, referenceNotFound(prefix, in.UUID)
	}
	if err != nil {
		return store.Reference{}, err
	}
	return *ref, nil
}

// RemoveReference removes a reference from its idea, proposal or task.
func (a *App) RemoveReference(ctx context.Context, r Request, id string) error {
	const prefix = "Failed to remove reference: "
	if _, err := a.referenceAccess(ctx, r, id, prefix); err != nil {
		return err
	}
	err := a.Store.RemoveReference(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return referenceNotFound(prefix, id)
	}
	return err
}

// referenceNotFound is the refusal for a reference the caller cannot reach: missing, or on a
// target the caller may not see or edit. prefix is the tool's failure wording ("" or "Failed to
// ...: ").
func referenceNotFound(prefix, id string) error {
	return Refuse(vocab.RefusedNotFound, "%sReference with UUID %s not found", prefix, id)
}
