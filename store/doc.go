// Package store is Chorus's database layer: bun models, queries, embedded migrations, and the
// few differences between PostgreSQL and SQLite.
//
// It knows the schema and the read rules of docs/rules.md (project access, ordering, counts). The
// project group files (groups.go and groups_*.go, one per concern, listed in groups.go) also hold
// decisions: who may manage a group or move a project, the confirmation tokens of changes to
// access, and the preview sentences shown to agents (docs/rules.md §4.11, §6.5). It must not
// know about MCP, HTTP or Temporal, and imports no other Chorus package. Driver errors are
// mapped to the sentinels in errors.go; SQL text never leaves this package.
package store
