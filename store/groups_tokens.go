package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// accessState is everything a confirmation token covers (docs/rules.md §6.5): the groups'
// and projects' visibility, group and access version, and the memberships of all of them.
type accessState struct {
	lines []string
}

func (a *accessState) add(format string, args ...any) {
	a.lines = append(a.lines, fmt.Sprintf(format, args...))
}

// token is the digest of the operation, who asks it, what it changes and the access state it
// was judged on: the same for a preview and its confirmation while nothing changed, different
// as soon as anything it covers does.
func (a *accessState) token(op string, c Caller, change ...string) string {
	h := sha256.New()
	for _, l := range append([]string{"chorus-confirm-v1", op, c.CompanyUUID, c.OwnerUUID, c.AgentUUID}, change...) {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	lines := slices.Clone(a.lines)
	slices.Sort(lines)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return "cft_" + hex.EncodeToString(h.Sum(nil))[:40]
}

func (a *accessState) group(ctx context.Context, db bun.IDB, groupUUID string) error {
	if groupUUID == "" {
		return nil
	}
	var g ProjectGroup
	if err := db.NewSelect().Model(&g).Where("uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	a.add("group %s %s v%d", g.UUID, g.Visibility, g.AccessVersion)
	var ms []ProjectGroupMember
	if err := db.NewSelect().Model(&ms).Where("group_uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("group-member %s %s %s", groupUUID, m.UserUUID, m.Role)
	}
	return nil
}

func (a *accessState) project(ctx context.Context, db bun.IDB, p Project) error {
	a.add("project %s %s %s", p.UUID, p.Visibility, deref(p.GroupUUID))
	var ms []ProjectMember
	if err := db.NewSelect().Model(&ms).Where("project_uuid = ?", p.UUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("project-member %s %s %s", p.UUID, m.UserUUID, m.Role)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ErrConfirmationRequired: a change that alters access was asked without a token.
var ErrConfirmationRequired error = &Refusal{Msg: "Confirmation required: call again with preview=true and pass the returned " +
	"confirmationToken to apply this change"}

// ErrStaleToken: the token does not match the change asked or the access state now.
var ErrStaleToken error = &Refusal{Msg: "Confirmation token is stale or does not match this change: access changed since the " +
	"preview, or the call differs from the previewed one. Call again with preview=true and confirm with the new token"}
