package mcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/perm"
)

// Toolsets (docs/rules.md §3.3): every tool of the table belongs to one toolset, named by the
// lifecycle stage it serves. A connection selects toolsets (header X-Chorus-Toolsets or path
// /api/mcp/x/<names>); core is always on; without a selection each preset gets the toolsets its
// role uses. Tools outside the selection are neither listed nor callable, so a model reads only
// the tools of the stage it works in.

// toolset names a group of tools. The zero value is no toolset: a table test rejects a tool
// that forgot its own.
type toolset uint8

// The toolsets, in the order chorus_checkin, docs/clients.md and docs/tools.md list them.
const (
	tsCore toolset = iota + 1
	tsIdeas
	tsProposals
	tsDevelop
	tsSessions
	tsReview
	tsCollab
	tsProjects
)

// toolsetInfo is a toolset's name, as connections write it, and what it holds, as
// chorus_checkin tells the model.
type toolsetInfo struct {
	id    toolset
	name  string
	about string
}

var toolsetTable = []toolsetInfo{
	{tsCore, "core", "check in, your assignments and notifications, reading projects, ideas and tasks (always on)"},
	{tsIdeas, "ideas", "ideas and their elaboration: create, claim, clarify, resolve"},
	{tsProposals, "proposals", "proposals and their document and task drafts, validation and submission; tasks outside proposals"},
	{tsDevelop, "develop", "finding, claiming and working tasks through submission; assigning tasks"},
	{tsSessions, "sessions", "work sessions and their task check-ins, for agents running several workers"},
	{tsReview, "review", "deciding proposals (approve, reject, close, revoke) and verifying, reopening and closing tasks"},
	{tsCollab, "collab", "comments, mentions, activity, search, documents and references"},
	{tsProjects, "projects", "creating projects, project groups and their membership, moving ideas between projects"},
}

// allToolsetsName selects every toolset.
const allToolsetsName = "all"

func (t toolset) String() string {
	for _, i := range toolsetTable {
		if i.id == t {
			return i.name
		}
	}
	return "none"
}

// selection is a set of toolsets; core is in every selection a connection can have.
type selection uint16

func (s selection) has(t toolset) bool { return t != 0 && s&(1<<t) != 0 }

func (s selection) with(t toolset) selection { return s | 1<<t }

// allToolsets selects every toolset.
var allToolsets = func() selection {
	var s selection
	for _, i := range toolsetTable {
		s = s.with(i.id)
	}
	return s
}()

// names lists the selected toolsets in table order.
func (s selection) names() []string {
	var out []string
	for _, i := range toolsetTable {
		if s.has(i.id) {
			out = append(out, i.name)
		}
	}
	return out
}

func (s selection) String() string { return strings.Join(s.names(), ",") }

// toolsetNames lists every toolset's name, then "all".
func toolsetNames() []string {
	out := make([]string, 0, len(toolsetTable)+1)
	for _, i := range toolsetTable {
		out = append(out, i.name)
	}
	return append(out, allToolsetsName)
}

// NormalizeToolsets checks a comma-separated list of toolset names as a connection selects them
// (header X-Chorus-Toolsets or path /api/mcp/x/<names>; docs/rules.md §3.3) and writes it the
// way the server reads it: "all" when it selects every toolset, else the names in table order
// with core left out (core is always on), or "core" when it names core alone. An unknown name, or
// a list that names none, is an error that names it and lists the toolsets.
func NormalizeToolsets(list string) (string, error) {
	s, err := parseSelection(list)
	if err != nil {
		return "", err
	}
	if s == allToolsets {
		return allToolsetsName, nil
	}
	names := s.names()
	if len(names) > 1 {
		names = names[1:] // core is first in the table, and always on
	}
	return strings.Join(names, ","), nil
}

// parseSelection reads a comma-separated list of toolset names (case-insensitive, spaces
// ignored; "all" selects every one). core is always added. An unknown name, or a list that names
// none, is an error that lists the known names.
func parseSelection(list string) (selection, error) {
	s := selection(0).with(tsCore)
	named := false
	for raw := range strings.SplitSeq(list, ",") {
		name := strings.ToLower(strings.TrimSpace(raw))
		if name == "" {
			continue
		}
		named = true
		if name == allToolsetsName {
			s |= allToolsets
			continue
		}
		i := slices.IndexFunc(toolsetTable, func(i toolsetInfo) bool { return i.name == name })
		if i < 0 {
			return 0, fmt.Errorf("unknown toolset %q; the toolsets are %s", clipped(strings.TrimSpace(raw)),
				strings.Join(toolsetNames(), ", "))
		}
		s = s.with(toolsetTable[i].id)
	}
	if !named {
		return 0, fmt.Errorf("no toolset named; the toolsets are %s", strings.Join(toolsetNames(), ", "))
	}
	return s, nil
}

// presetToolsets is the selection each preset gets when a connection selects none: the
// toolsets its role uses in a lifecycle (docs/rules.md §3.3).
var presetToolsets = map[string][]toolset{
	perm.DeveloperAgent: {tsCore, tsDevelop},
	perm.PMAgent:        {tsCore, tsIdeas, tsProposals},
	perm.AdminAgent:     {tsCore, tsProposals, tsReview},
}

// defaultSelection is the selection of a connection that names none (docs/rules.md §3.3): the
// union of the agent's presets' toolsets; an agent with no preset gets core and every toolset
// holding a tool that one of its permission bits gates.
func defaultSelection(tools []*builtTool, roles []string, perms perm.Set) selection {
	s := selection(0).with(tsCore)
	preset := false
	for _, r := range roles {
		name, err := perm.ParsePreset(r)
		if err != nil {
			continue
		}
		preset = true
		for _, t := range presetToolsets[name] {
			s = s.with(t)
		}
	}
	if !preset {
		for _, t := range tools {
			if t.spec.Perm != perm.Public && perms.Has(t.spec.Perm) {
				s = s.with(t.spec.Toolset)
			}
		}
	}
	return s
}
