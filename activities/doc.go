// Package activities holds every side effect of Chorus's workflows: one method per effect on
// the store, on the Activities struct, registered once and referenced from workflow code through
// a typed nil (var a *Activities; workflow.ExecuteLocalActivity(ctx, a.PersistIdea, ...)).
//
// Activities make no decisions; the workflow decides and an activity persists. Each is
// idempotent: rows carry the workflow's version or deterministic ids, so a retried or replayed
// activity never duplicates a row or moves it backwards. This package imports store only.
package activities
