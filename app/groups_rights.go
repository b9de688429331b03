package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Who may manage project groups and move projects (docs/rules.md §6.3, §6.5), the confirmation
// tokens of changes to access, and their refusals.

// errGroupManage: the caller sees the group but may not change it this way.
func errGroupManage() error {
	return Refuse(vocab.RefusedPrecondition, "Only group admins can manage this group")
}

// errProjectManage: the caller sees the project but may not move it, manage its members or
// delete it with its group (docs/rules.md §6.3, manage_project).
func errProjectManage() error {
	return Refuse(vocab.RefusedPrecondition, "Only project admins can manage this project")
}

// errLastAdmin: the change would leave the project or group (what) without an admin, whom only
// an operator could then replace.
func errLastAdmin(what string) error {
	return Refuse(vocab.RefusedPrecondition, "Cannot take away the last admin role of this %s: make another user admin first", what)
}

// CheckRole refuses a role that is not one of the three.
func CheckRole(role string) error {
	switch role {
	case "viewer", "editor", "admin":
		return nil
	}
	return Refuse(vocab.RefusedPrecondition, "role must be viewer, editor or admin, got %q", role)
}

// keepAnAdmin refuses to take the admin role of a member with role cur away when there is no
// other admin.
func keepAnAdmin(f store.MemberFacts, what string) error {
	if f.Role == "admin" && f.Admins <= 1 {
		return errLastAdmin(what)
	}
	return nil
}

// manageLevel is manage_project (docs/rules.md §6.3): editor on a public project, admin on a
// private one.
func manageLevel(visibility string) store.Access {
	if visibility == "private" {
		return store.AccessAdmin
	}
	return store.AccessEditor
}

// visibilityIn is the visibility of a project whose own is project in a group whose visibility
// is group: a private group makes its projects private (docs/rules.md §6.5); a public one leaves
// each project's own.
func visibilityIn(group, project string) string {
	if group == "private" {
		return "private"
	}
	return project
}

// confirmToken is the digest of the operation, who asks it, what it changes and the access
// facts it was judged on: the same for a preview and its confirmation while nothing changed,
// different as soon as anything it covers does (docs/rules.md §6.5).
func confirmToken(facts store.AccessFacts, op string, c store.Caller, change ...string) string {
	h := sha256.New()
	for _, l := range append([]string{"chorus-confirm-v1", op, c.CompanyUUID, c.OwnerUUID, c.AgentUUID}, change...) {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	lines := slices.Clone(facts)
	slices.Sort(lines)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return "cft_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// checkToken refuses to apply a change that alters access without the token of its preview, or
// with a token that no longer matches (want is the token of the change on the state now).
func checkToken(got, want string) error {
	switch {
	case got == "":
		return Refuse(vocab.RefusedPrecondition, "Confirmation required: call again with preview=true and pass the returned "+
			"confirmationToken to apply this change")
	case got != want:
		return Refuse(vocab.RefusedPrecondition, "Confirmation token is stale or does not match this change: access changed since the "+
			"preview, or the call differs from the previewed one. Call again with preview=true and confirm with the new token")
	}
	return nil
}

// errGroupHasWork: deleting the group's projects would delete lifecycle entities (docs/rules.md
// §4.11), whose workflows would outlive their rows.
func errGroupHasWork(w store.WorkCounts) error {
	return Refuse(vocab.RefusedPrecondition, "%s", fmt.Sprintf("Cannot delete the group's projects: they still hold %d idea(s), "+
		"%d proposal(s) and %d task(s). Delete those first (or move the ideas to another project with chorus_move_idea), or "+
		"delete the group with deleteProjects=false, which keeps the projects ungrouped", w.Ideas, w.Proposals, w.Tasks))
}
