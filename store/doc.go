// Package store is Chorus's database layer: bun models, queries, embedded migrations, and the
// few differences between PostgreSQL and SQLite.
//
// It knows the schema and the read rules of docs/rules.md (project access, ordering, counts). It must not
// know about MCP, HTTP or Temporal, and imports no other Chorus package. Driver errors are
// mapped to the sentinels in errors.go; SQL text never leaves this package.
package store
