// Package perm holds Chorus's permission model (docs/rules.md §6.1): five resources times three actions,
// the role presets, and the effective set an agent gets from its roles and custom bits.
//
// It knows nothing of storage, HTTP or MCP; everything that decides "may this caller see or run
// this tool" asks this package.
package perm

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Bit is one permission, written "resource:action" (e.g. "task:write"). The zero Bit is not a
// permission at all: a tool table entry that forgets its requirement is caught by a test.
type Bit uint16

// The fifteen permission bits of docs/rules.md §6.1, plus Public for tools that need none.
const (
	IdeaRead Bit = 1 << iota
	IdeaWrite
	IdeaAdmin
	ProposalRead
	ProposalWrite
	ProposalAdmin
	DocumentRead
	DocumentWrite
	DocumentAdmin
	TaskRead
	TaskWrite
	TaskAdmin
	ProjectRead
	ProjectWrite
	ProjectAdmin

	// Public marks a tool that every authenticated agent may call. It is not part of any Set.
	Public Bit = 1 << 15
)

// Resources and Actions in the order docs/rules.md §6.1 and chorus_checkin list them.
var (
	Resources = []string{"idea", "proposal", "document", "task", "project"}
	Actions   = []string{"read", "write", "admin"}
)

// All is every one of the fifteen bits.
const All Set = Set(ProjectAdmin<<1) - 1

// Set is a set of permission bits; the effective permissions of an agent.
type Set uint16

// Has reports whether b is in s. Public is in every set.
func (s Set) Has(b Bit) bool {
	if b == Public {
		return true
	}
	return b != 0 && Set(b)&s == Set(b)
}

// With returns s plus b.
func (s Set) With(b Bit) Set {
	if b == Public {
		return s
	}
	return s | Set(b)
}

// Bits lists the bits of s in resource-then-action order.
func (s Set) Bits() []Bit {
	var out []Bit
	for i := range len(Resources) * len(Actions) {
		if b := Bit(1) << i; s.Has(b) {
			out = append(out, b)
		}
	}
	return out
}

// Strings lists s as "resource:action" strings in resource-then-action order.
func (s Set) Strings() []string {
	var out []string
	for _, b := range s.Bits() {
		out = append(out, b.String())
	}
	return out
}

// ByResource is the shape chorus_checkin reports (docs/rules.md §4.1): resource -> actions held, in
// read, write, admin order; resources with no bits are left out.
func (s Set) ByResource() map[string][]string {
	out := map[string][]string{}
	for ri, r := range Resources {
		for ai, a := range Actions {
			if s.Has(Bit(1) << (ri*len(Actions) + ai)) {
				out[r] = append(out[r], a)
			}
		}
	}
	return out
}

// String returns "resource:action", "public", or "invalid".
func (b Bit) String() string {
	if b == Public {
		return "public"
	}
	for i := range len(Resources) * len(Actions) {
		if Bit(1)<<i == b {
			return Resources[i/len(Actions)] + ":" + Actions[i%len(Actions)]
		}
	}
	return "invalid"
}

// Resource returns the resource part of b ("task" for task:write), or "" for Public.
func (b Bit) Resource() string {
	s := b.String()
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[:i]
	}
	return ""
}

// Action returns the action part of b ("write" for task:write), or "" for Public.
func (b Bit) Action() string {
	s := b.String()
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[i+1:]
	}
	return ""
}

// Parse reads "resource:action" (case-insensitive, surrounding spaces ignored).
func Parse(s string) (Bit, error) {
	res, act, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	ri, ai := slices.Index(Resources, res), slices.Index(Actions, act)
	if !ok || ri < 0 || ai < 0 {
		return 0, fmt.Errorf("permission %q is not resource:action; resources are %s and actions are %s",
			s, strings.Join(Resources, ", "), strings.Join(Actions, ", "))
	}
	return Bit(1) << (ri*len(Actions) + ai), nil
}

// Preset names (docs/rules.md §1.3, §6.1).
const (
	DeveloperAgent = "developer_agent"
	PMAgent        = "pm_agent"
	AdminAgent     = "admin_agent"
)

// PresetNames lists the presets in the order they grow.
var PresetNames = []string{DeveloperAgent, PMAgent, AdminAgent}

var presets = map[string]Set{
	DeveloperAgent: set(IdeaRead, ProposalRead, DocumentRead, TaskRead, ProjectRead, TaskWrite),
	PMAgent: set(IdeaRead, ProposalRead, DocumentRead, TaskRead, ProjectRead,
		IdeaWrite, ProposalWrite, DocumentWrite, TaskWrite, ProjectWrite),
	AdminAgent: All,
}

// legacy role names still found in older data map to the same presets.
var aliases = map[string]string{"developer": DeveloperAgent, "pm": PMAgent, "admin": AdminAgent}

// ParsePreset returns the canonical preset name for a role name or legacy alias.
func ParsePreset(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	if _, ok := presets[n]; !ok {
		return "", fmt.Errorf("unknown preset %q; use one of %s", name, strings.Join(PresetNames, ", "))
	}
	return n, nil
}

// Preset returns the bits of a preset (or legacy alias); unknown names give the empty set.
func Preset(name string) Set {
	n, err := ParsePreset(name)
	if err != nil {
		return 0
	}
	return presets[n]
}

// Effective is the permission set of an agent (docs/rules.md §1.3): the union of its roles' presets and
// of those custom bits that are valid "resource:action" strings. Unknown roles and malformed
// custom bits add nothing.
func Effective(roles, custom []string) Set {
	var s Set
	for _, r := range roles {
		s |= Preset(r)
	}
	for _, c := range custom {
		if b, err := Parse(c); err == nil {
			s = s.With(b)
		}
	}
	return s
}

// Sorted returns the unique canonical forms of custom permission strings, rejecting any that
// do not parse. Used when an operator creates an agent.
func Sorted(custom []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, c := range custom {
		b, err := Parse(c)
		if err != nil {
			return nil, err
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

func set(bits ...Bit) Set {
	var s Set
	for _, b := range bits {
		s = s.With(b)
	}
	return s
}
