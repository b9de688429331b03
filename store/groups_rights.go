package store

import "slices"

// Level is the caller's level on the group: its explicit role, at least editor on a public
// group (docs/rules.md §6.5).
func (v *GroupView) Level() Access { return groupLevel(v.Visibility, v.MemberRole) }

// IsAdmin: the caller is an explicit admin of the group.
func (v *GroupView) IsAdmin() bool { return parseRole(v.MemberRole) == AccessAdmin }

func groupLevel(visibility string, role *string) Access {
	l := parseRole(role)
	if visibility == "public" {
		l = max(l, AccessEditor)
	}
	return l
}

// ErrGroupManage: the caller sees the group but may not change it this way.
var ErrGroupManage error = &Refusal{Msg: "Only group admins can manage this group"}

// ErrProjectManage: the caller sees the project but may not move it or delete it with its group
// (docs/rules.md §6.3, manage_project).
var ErrProjectManage error = &Refusal{Msg: "Only project admins can manage this project"}

// manageLevel is manage_project (docs/rules.md §6.3): editor on a public project, admin on a
// private one.
func manageLevel(visibility string) Access {
	if visibility == "private" {
		return AccessAdmin
	}
	return AccessEditor
}

// rank orders the level names a RoleChange holds: none, viewer, editor, admin.
func rank(level string) int {
	return slices.Index([]string{"none", "viewer", "editor", "admin"}, level)
}
