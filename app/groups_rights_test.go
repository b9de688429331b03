package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A confirmation token covers the operation, the caller, the change and the access facts, in
// whatever order the facts were read.
func TestConfirmToken(t *testing.T) {
	c := store.Caller{CompanyUUID: "c", OwnerUUID: "o", AgentUUID: "a"}
	facts := store.AccessFacts{"group g public v1", "group-member g u admin"}
	tok := confirmToken(facts, "group-delete", c, "g", "ungroup")
	require.Regexp(t, `^cft_[0-9a-f]{40}$`, tok)
	require.Equal(t, tok, confirmToken(store.AccessFacts{facts[1], facts[0]}, "group-delete", c, "g", "ungroup"))
	for _, other := range []string{
		confirmToken(facts, "group-delete", c, "g", "delete-projects"),
		confirmToken(facts, "project-move", c, "g", "ungroup"),
		confirmToken(facts, "group-delete", store.Caller{CompanyUUID: "c", OwnerUUID: "o", AgentUUID: "b"}, "g", "ungroup"),
		confirmToken(append(facts, "group-member g v viewer"), "group-delete", c, "g", "ungroup"),
	} {
		require.NotEqual(t, tok, other)
	}
}

// The refusals of group rights and confirmations are preconditions, worded once here.
func TestGroupRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		text string
	}{
		{checkToken("", "cft_x"), "Confirmation required: call again with preview=true and pass the returned " +
			"confirmationToken to apply this change"},
		{checkToken("cft_y", "cft_x"), "Confirmation token is stale or does not match this change: access changed since the " +
			"preview, or the call differs from the previewed one. Call again with preview=true and confirm with the new token"},
		{errGroupManage(), "Only group admins can manage this group"},
		{errProjectManage(), "Only project admins can manage this project"},
		{CheckRole("owner"), `role must be viewer, editor or admin, got "owner"`},
		{keepAnAdmin(store.MemberFacts{Role: "admin", Admins: 1}, "project"),
			"Cannot take away the last admin role of this project: make another user admin first"},
		{errGroupHasWork(store.WorkCounts{Ideas: 1, Tasks: 2}), "Cannot delete the group's projects: they still hold 1 idea(s), " +
			"0 proposal(s) and 2 task(s). Delete those first (or move the ideas to another project with chorus_move_idea), or " +
			"delete the group with deleteProjects=false, which keeps the projects ungrouped"},
	} {
		var r *Refusal
		require.True(t, errors.As(tc.err, &r), tc.text)
		require.Equal(t, vocab.RefusedPrecondition, r.Kind)
		require.Equal(t, tc.text, r.Msg)
	}
	require.NoError(t, checkToken("cft_x", "cft_x"))
	require.NoError(t, CheckRole("editor"))
	require.NoError(t, keepAnAdmin(store.MemberFacts{Role: "admin", Admins: 2}, "project"))
	require.NoError(t, keepAnAdmin(store.MemberFacts{Role: "editor", Admins: 1}, "project"))
}

// A private group makes its projects private; a public one leaves each project's own.
func TestVisibilityIn(t *testing.T) {
	require.Equal(t, "private", visibilityIn("private", "public"))
	require.Equal(t, "private", visibilityIn("private", "private"))
	require.Equal(t, "public", visibilityIn("public", "public"))
	require.Equal(t, "private", visibilityIn("public", "private"))
}
