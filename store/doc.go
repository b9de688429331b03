// Package store is Chorus's database layer: bun models, queries, embedded migrations, and the
// few differences between PostgreSQL and SQLite.
//
// It knows the schema and the read rules of docs/rules.md (project access, ordering, counts), and
// holds no decisions: who may do what, confirmation tokens and the sentences shown to agents are
// package app's. A change that a use case must decide inside one transaction (project groups and
// their access: AccessTx, groups_tx.go) gives it the facts to read and the writes to make, and
// decides nothing itself. It must not know about MCP, HTTP or Temporal, and imports no other
// Chorus package but vocab, the shared names. Driver errors are mapped to the sentinels in errors.go; SQL text never leaves
// this package.
package store
