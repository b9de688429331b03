// Package vocab is Chorus's vocabulary: the names every layer shares (statuses and their
// transition tables, criterion statuses, refusal kinds, id helpers). It imports nothing, so any
// package may use it; it holds names and pure tables, never behaviour that needs the database or
// Temporal (cmd/chorus TestImportDirection keeps it a leaf).
package vocab
