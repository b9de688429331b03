package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"
)

// Full-text search (docs/rules.md §4.12) with each database's own engine: SQLite's FTS5 index
// search_fts, and PostgreSQL's table search_vectors of stored tsvectors with its GIN index, each
// kept current by triggers (migrations ..._search, ..._search_vectors). Query text is user input and never reaches either engine's
// query language as written: it is cut into words, and each word is passed as a quoted term that
// matches any word starting with it, all words required. No query string can make a syntax error.

// SearchKind is one kind of entity chorus_search finds.
type SearchKind struct {
	Entity string // the entityType agents see
	kind   string // its kind in search_keys / search_fts (SQLite)
	table  string
	title  string // the title column
	body   string // the text column
	status string // SQL for the row's status
	// inProject: the entity belongs to a project (projects and groups do not).
	inProject bool
}

// SearchKinds are the searchable kinds, in the order their counts are reported.
var SearchKinds = []SearchKind{
	{Entity: "task", kind: "task", table: "tasks", title: "title", body: "description", status: "x.status", inProject: true},
	{Entity: "idea", kind: "idea", table: "ideas", title: "title", body: "content", status: "x.status", inProject: true},
	{Entity: "proposal", kind: "proposal", table: "proposals", title: "title", body: "description", status: "x.status", inProject: true},
	{Entity: "document", kind: "document", table: "documents", title: "title", body: "content", status: "x.type", inProject: true},
	{Entity: "project", kind: "project", table: "projects", title: "name", body: "description", status: "'active'"},
	{Entity: "project_group", kind: "group", table: "project_groups", title: "name", body: "description", status: "'active'"},
}

// SearchRequest is one search: the text (or a uuid), the kinds asked for (none means all) and the
// scope (at most one of ProjectUUID and GroupUUID; neither means every project the caller sees).
type SearchRequest struct {
	Text        string
	Entities    []string
	ProjectUUID string
	GroupUUID   string
	// PerKind bounds the hits returned per kind (newest updated first); counts are complete.
	PerKind int
}

// SnippetChars is how much of each found entity's text Search returns: its first 8,192
// characters, all a snippet looks at (docs/rules.md §4.12). A search that finds 300 texts of
// 512 KiB each reads 2.4 MB of them, not 150 MB.
const SnippetChars = 8192

// SearchHit is one entity found.
type SearchHit struct {
	EntityType  string    `bun:"entity_type"`
	UUID        string    `bun:"uuid"`
	Title       string    `bun:"title"`
	Body        *string   `bun:"body"` // the first SnippetChars characters of the text
	Status      string    `bun:"status"`
	ProjectUUID *string   `bun:"project_uuid"`
	ProjectName *string   `bun:"project_name"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// SearchResult is what Search found: up to PerKind hits of each kind asked for, newest updated
// first within a kind, and each kind's full count (zero for kinds not asked for).
type SearchResult struct {
	Hits   []SearchHit
	Counts map[string]int
}

// MaxSearchTerms bounds the words of one query (docs/rules.md §4.12); later words are ignored.
// Each word is a prefix the database's index expands, so the bound is on the work one search
// asks of it.
const MaxSearchTerms = 16

// SearchTerms cuts text into the words search matches: runs of letters, digits and combining
// marks, lower-cased, the way SQLite's unicode61 tokenizer cuts indexed text. At most
// MaxSearchTerms.
func SearchTerms(text string) []string {
	var terms []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	}) {
		if len(terms) == MaxSearchTerms {
			break
		}
		terms = append(terms, strings.ToLower(w))
	}
	return terms
}

// Search runs a full-text search for the caller (docs/rules.md §4.12): only entities of projects the
// caller can see, within the scope, are found or counted. A scope project the caller cannot see is
// "Project not found", a scope group it cannot see "Project group not found".
//
// On PostgreSQL a match reads each entity's stored tsvector (search_vectors, migration
// 20261201000051_search_vectors), never its text: plans that recomputed the tsvector of every
// row they looked at took 24 s for 60 texts of 400 KB (BenchmarkCraftedSearch).
func (s *Store) Search(ctx context.Context, c Caller, r SearchRequest) (*SearchResult, error) {
	if err := s.checkScope(ctx, c, r); err != nil {
		return nil, err
	}
	out := &SearchResult{Counts: map[string]int{}}
	match, ok, err := s.matchClause(ctx, r.Text)
	if err != nil || !ok { // no word to look for: nothing matches
		return out, err
	}
	for _, k := range s.kinds(r.Entities) {
		cond, args := match(k)
		q := s.searchBase(c, k, r).Where(cond, args...)
		n, err := s.DB.NewSelect().TableExpr("(?) AS m", q).Count(ctx)
		if err != nil {
			return nil, err
		}
		out.Counts[k.Entity] = int(n)
		if n == 0 {
			continue
		}
		var hits []SearchHit
		if err := q.Order("x.updated_at DESC", "x.uuid DESC").Limit(int64(r.PerKind)).Scan(ctx, &hits); err != nil {
			return nil, err
		}
		out.Hits = append(out.Hits, hits...)
	}
	return out, nil
}

// SearchUUID looks uuid up among the kinds asked for, within the caller's access and the scope,
// and returns the entity, or nil when none of them has it.
func (s *Store) SearchUUID(ctx context.Context, c Caller, r SearchRequest, uuid string) (*SearchHit, error) {
	if err := s.checkScope(ctx, c, r); err != nil {
		return nil, err
	}
	for _, k := range s.kinds(r.Entities) {
		var hits []SearchHit
		if err := s.searchBase(c, k, r).Where("x.uuid = ?", uuid).Limit(1).Scan(ctx, &hits); err != nil {
			return nil, err
		}
		if len(hits) > 0 {
			return &hits[0], nil
		}
	}
	return nil, nil
}

func (s *Store) checkScope(ctx context.Context, c Caller, r SearchRequest) error {
	switch {
	case r.ProjectUUID != "":
		_, err := s.RequireProject(ctx, c, r.ProjectUUID, AccessViewer)
		return err
	case r.GroupUUID != "":
		_, err := visibleGroup(ctx, s.DB, c, r.GroupUUID)
		return err
	}
	return nil
}

// kinds returns the SearchKinds named by entities, all of them when it is empty.
func (s *Store) kinds(entities []string) []SearchKind {
	if len(entities) == 0 {
		return SearchKinds
	}
	var out []SearchKind
	for _, k := range SearchKinds {
		for _, e := range entities {
			if e == k.Entity {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// searchBase selects the rows of kind k the caller may find within r's scope, as SearchHit
// columns; "x" is the kind's table.
func (s *Store) searchBase(c Caller, k SearchKind, r SearchRequest) *bun.SelectQuery {
	visible := s.projectRoles(c).ColumnExpr("project.uuid AS visible_uuid")
	q := s.DB.NewSelect().TableExpr(k.table+" AS x").
		ColumnExpr("? AS entity_type", k.Entity).
		ColumnExpr("x.uuid").
		ColumnExpr("x."+k.title+" AS title").
		ColumnExpr("substr(x."+k.body+", 1, ?) AS body", SnippetChars).
		ColumnExpr(k.status+" AS status").
		ColumnExpr("x.updated_at").
		Where("x.company_uuid = ?", c.CompanyUUID)
	switch {
	case k.inProject:
		q = q.ColumnExpr("x.project_uuid").ColumnExpr("p.name AS project_name").
			Join("JOIN projects AS p ON p.uuid = x.project_uuid").
			Where("x.project_uuid IN (SELECT visible_uuid FROM (?) AS v)", visible)
		if r.ProjectUUID != "" {
			q = q.Where("x.project_uuid = ?", r.ProjectUUID)
		}
		if r.GroupUUID != "" {
			q = q.Where("p.group_uuid = ?", r.GroupUUID)
		}
	case k.table == "projects":
		q = q.ColumnExpr("NULL AS project_uuid").ColumnExpr("NULL AS project_name").
			Where("x.uuid IN (SELECT visible_uuid FROM (?) AS v)", visible)
		if r.ProjectUUID != "" {
			q = q.Where("x.uuid = ?", r.ProjectUUID)
		}
		if r.GroupUUID != "" {
			q = q.Where("x.group_uuid = ?", r.GroupUUID)
		}
	default: // project groups: public ones and those the caller's owner is a member of
		q = q.ColumnExpr("NULL AS project_uuid").ColumnExpr("NULL AS project_name").
			Where("(x.visibility = 'public' OR EXISTS (SELECT 1 FROM project_group_members AS gm WHERE gm.group_uuid = x.uuid AND gm.user_uuid = ?))", c.OwnerUUID)
		if r.ProjectUUID != "" {
			q = q.Where("x.uuid = (SELECT sp.group_uuid FROM projects AS sp WHERE sp.uuid = ?)", r.ProjectUUID)
		}
		if r.GroupUUID != "" {
			q = q.Where("x.uuid = ?", r.GroupUUID)
		}
	}
	return q
}

// matchClause turns text into a WHERE clause builder for one kind, or ok=false when text has no
// word to look for.
func (s *Store) matchClause(ctx context.Context, text string) (func(SearchKind) (string, []any), bool, error) {
	if s.Dialect() == "pg" {
		return s.pgMatch(ctx, text)
	}
	terms := SearchTerms(text)
	if len(terms) == 0 {
		return nil, false, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		// A term holds letters, digits and marks only; doubling quotes keeps the FTS5 string
		// literal closed even so.
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"*`
	}
	expr := strings.Join(quoted, " AND ")
	return func(k SearchKind) (string, []any) {
		return "x.uuid IN (SELECT k.uuid FROM search_fts JOIN search_keys AS k ON k.id = search_fts.rowid " +
			"WHERE search_fts MATCH ? AND k.kind = ?)", []any{expr, k.kind}
	}, true, nil
}

// pgWords is the SQL of text with its ASCII punctuation turned into spaces, so that PostgreSQL's
// parser splits "config.yaml", "v1.2" and "dark-mode" into words, as SQLite's FTS5 does.
func pgWords(text string) string { return "regexp_replace(" + text + ", '[[:punct:]]+', ' ', 'g')" }

// pgMatch lets PostgreSQL cut text into words with the same parser and configuration that built
// the indexes, then requires each word as a prefix. The tsquery is written from the lexemes with
// tsquery's own quoting ('...' with ' and \ escaped), so its syntax is fixed whatever the text.
func (s *Store) pgMatch(ctx context.Context, text string) (func(SearchKind) (string, []any), bool, error) {
	// The first MaxSearchTerms words only, as on SQLite (tsvector_to_array sorts its lexemes).
	text = strings.Join(SearchTerms(text), " ")
	var lexemes []string
	err := s.DB.NewRaw("SELECT unnest(tsvector_to_array(to_tsvector('simple'::regconfig, "+pgWords("?")+")))", text).Scan(ctx, &lexemes)
	if err != nil {
		return nil, false, fmt.Errorf("search terms: %w", err)
	}
	if len(lexemes) == 0 {
		return nil, false, nil
	}
	if len(lexemes) > MaxSearchTerms {
		lexemes = lexemes[:MaxSearchTerms]
	}
	parts := make([]string, len(lexemes))
	for i, l := range lexemes {
		l = strings.ReplaceAll(l, `\`, `\\`)
		l = strings.ReplaceAll(l, `'`, `''`)
		parts[i] = "'" + l + "':*"
	}
	tsq := strings.Join(parts, " & ")
	return func(k SearchKind) (string, []any) {
		return "x.uuid IN (SELECT sv.uuid FROM search_vectors AS sv WHERE sv.kind = ? AND sv.vec @@ ?::tsquery)",
			[]any{k.kind, tsq}
	}, true, nil
}
