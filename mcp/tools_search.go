package mcp

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Search tools (docs/rules.md §4.12): full-text search with the database's own engine
// (store/search.go), and the people an agent can mention.

// SearchIn is chorus_search's input.
type SearchIn struct {
	Query       string   `json:"query" jsonschema:"words, or a uuid" chorus:"minLength=1;maxLength=500"`
	Scope       string   `json:"scope,omitempty" jsonschema:"default global" chorus:"enum=global|group|project"`
	ScopeUUID   *UUID    `json:"scopeUuid,omitempty"`
	EntityTypes []string `json:"entityTypes,omitempty" chorus:"enum=task|idea|proposal|document|project|project_group"`
}

// SearchRow is one entity chorus_search found.
type SearchRow struct {
	EntityType  string    `json:"entityType" jsonschema:"task, idea, proposal, document, project or project_group"`
	UUID        string    `json:"uuid"`
	Title       string    `json:"title"`
	Snippet     string    `json:"snippet" jsonschema:"text around the first match, with ... where it was cut"`
	Status      string    `json:"status" jsonschema:"the entity's status; a document's type; active for projects and groups"`
	ProjectUUID *string   `json:"projectUuid" jsonschema:"null for projects and groups"`
	ProjectName *string   `json:"projectName"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// SearchCounts are the full match counts per kind (0 for kinds not asked for).
type SearchCounts struct {
	Tasks         int `json:"tasks"`
	Ideas         int `json:"ideas"`
	Proposals     int `json:"proposals"`
	Documents     int `json:"documents"`
	Projects      int `json:"projects"`
	ProjectGroups int `json:"projectGroups"`
}

// SearchOut is chorus_search's result.
type SearchOut struct {
	Results []SearchRow `json:"results"`
	Meta
	Counts SearchCounts `json:"counts"`
}

// searchLimit is how many results chorus_search returns, and how many it takes of each kind.
const searchLimit = 50

var search = tool[SearchIn, SearchOut]{
	Name: "chorus_search", Title: "Search", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "Find tasks, ideas, proposals, documents, projects and groups by words (all must match) or uuid.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SearchIn) (SearchOut, error) {
		res, err := d.app().Search(ctx, call.Request, app.SearchInput{Query: in.Query, Scope: in.Scope,
			ScopeUUID: (*string)(in.ScopeUUID), EntityTypes: in.EntityTypes, Limit: searchLimit})
		if err != nil {
			return SearchOut{}, err
		}
		hits, counts, terms := res.Hits, res.Counts, res.Terms
		rows := make([]SearchRow, len(hits))
		for i, h := range hits {
			rows[i] = SearchRow{EntityType: h.EntityType, UUID: h.UUID, Title: clip(h.Title), Snippet: snippet(h.Title, h.Body, terms),
				Status: h.Status, ProjectUUID: h.ProjectUUID, ProjectName: h.ProjectName, UpdatedAt: h.UpdatedAt}
		}
		c := SearchCounts{Tasks: counts["task"], Ideas: counts["idea"], Proposals: counts["proposal"], Documents: counts["document"],
			Projects: counts["project"], ProjectGroups: counts["project_group"]}
		total := c.Tasks + c.Ideas + c.Proposals + c.Documents + c.Projects + c.ProjectGroups
		wrap := func(r []SearchRow) any {
			return SearchOut{Results: r, Meta: Meta{Returned: len(r), Page: 1, PageSize: searchLimit, Total: total}, Counts: c}
		}
		return wrap(fit(rows, wrap)).(SearchOut), nil
	},
}

// snippetRunes is about how much text a snippet shows around the first match.
const snippetRunes = 100

// snippetScan is how much of an entity's text a snippet looks at: its first 8,192 characters
// (docs/rules.md §4.12), all the store returns of it. A match further on shows the text's start,
// as a match in the title only does.
const snippetScan = store.SnippetChars

// snippet is about 100 characters of an entity's text (its body, else its title) around the first
// word that starts with one of terms, with "..." where the text was cut and whitespace runs shown
// as one space. Without terms, or when the match is in the title only or past the first
// snippetScan characters, the text's start. The text is read once, whatever the number of
// terms: each word start is compared with the terms that begin with its first letter.
func snippet(title string, body *string, terms []string) string {
	text := title
	if body != nil && strings.TrimSpace(*body) != "" {
		text = *body
	}
	// The text's words, whitespace runs as one space, lower-cased beside it rune for rune so
	// positions line up; no more than snippetScan of them.
	runes := make([]rune, 0, min(len(text), snippetScan))
	lower := make([]rune, 0, cap(runes))
	space, cut := false, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = len(runes) > 0
			continue
		}
		if room := snippetScan - len(runes); room < 1 || (space && room < 2) {
			cut = true // r is more text
			break
		}
		if space {
			runes, lower = append(runes, ' '), append(lower, ' ')
			space = false
		}
		runes, lower = append(runes, r), append(lower, unicode.ToLower(r))
	}
	byFirst := map[rune][][]rune{}
	for _, t := range terms {
		if tr := []rune(t); len(tr) > 0 {
			byFirst[tr[0]] = append(byFirst[tr[0]], tr)
		}
	}
	at := -1
scan:
	for i := 0; i < len(lower) && len(byFirst) > 0; i++ {
		if i > 0 && isWordRune(lower[i-1]) {
			continue
		}
		for _, tr := range byFirst[lower[i]] {
			if i+len(tr) <= len(lower) && slices.Equal(lower[i:i+len(tr)], tr) {
				at = i
				break scan
			}
		}
	}
	start := 0
	if at > snippetRunes/2 {
		start = at - snippetRunes/2
	}
	end := min(len(runes), start+snippetRunes)
	if end-start < snippetRunes {
		start = max(0, end-snippetRunes)
	}
	out := string(runes[start:end])
	if start > 0 {
		out = "..." + out
	}
	if end < len(runes) || cut {
		out += "..."
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) }

// MentionablesIn is chorus_search_mentionables' input.
type MentionablesIn struct {
	Query      string `json:"query" jsonschema:"empty lists everyone" chorus:"maxLength=200"`
	Limit      int    `json:"limit,omitempty" jsonschema:"default 10" chorus:"min=1;max=100"`
	EntityType string `json:"entityType,omitempty" chorus:"enum=idea|proposal|task|document"`
	EntityUUID *UUID  `json:"entityUuid,omitempty" jsonschema:"with entityType: only people who can see it"`
}

// MentionableRow is one person chorus_search_mentionables offers.
type MentionableRow struct {
	Type      string  `json:"type" jsonschema:"user or agent"`
	UUID      string  `json:"uuid"`
	Name      string  `json:"name"`
	Email     *string `json:"email,omitempty"`
	AvatarURL *string `json:"avatarUrl,omitempty"`
	// Agents only.
	Roles       *[]string `json:"roles,omitempty" jsonschema:"agents: their role presets"`
	Online      *bool     `json:"online,omitempty" jsonschema:"agents: active within the last hour"`
	ActiveCount *int      `json:"activeCount,omitempty" jsonschema:"agents: their assigned and in-progress tasks you can see; 0 when offline"`
}

// Mentionables is chorus_search_mentionables' result.
type Mentionables struct {
	Results []MentionableRow `json:"results"`
	Meta
}

var searchMentionables = tool[MentionablesIn, Mentionables]{
	Name: "chorus_search_mentionables", Title: "Find people to mention", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "Find users and agents to @-mention, as @[Name](user:<uuid>) or @[Name](agent:<uuid>).",
	Run: func(ctx context.Context, d *Deps, call *Call, in MentionablesIn) (Mentionables, error) {
		people, err := d.app().Mentionables(ctx, call.Request, in.Query, in.EntityType, (*string)(in.EntityUUID))
		if err != nil {
			return Mentionables{}, err
		}
		limit := cmp.Or(in.Limit, 10)
		total := len(people)
		people = people[:min(limit, len(people))]
		rows := make([]MentionableRow, len(people))
		for i, p := range people {
			rows[i] = MentionableRow{Type: p.Type, UUID: p.UUID, Name: clip(p.Name), Email: p.Email, AvatarURL: p.AvatarURL}
			if p.Type == "agent" {
				roles, online, active := p.Roles, p.Online, p.ActiveCount
				rows[i].Roles, rows[i].Online, rows[i].ActiveCount = &roles, &online, &active
			}
		}
		wrap := func(r []MentionableRow) any {
			return Mentionables{Results: r, Meta: Meta{Returned: len(r), Page: 1, PageSize: limit, Total: total}}
		}
		return wrap(fit(rows, wrap)).(Mentionables), nil
	},
}
