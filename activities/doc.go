// Package activities holds every side effect of Chorus's workflows: methods on the Activities
// struct, registered once with the worker (workflows.Register) and referenced from workflow code
// through a typed nil (var a *activities.Activities; persist(ctx, a.ApplyTaskChange, change) runs
// one as a regular activity, read(ctx, a.TaskRows, uuids) as a local one: workflows/entity.go).
//
// Activities make no decisions; the workflow decides and an activity persists or reads. Each
// entity's workflow commits a change through one activity (ApplyIdeaChange, ApplyProposalChange,
// ApplyTaskChange), which the store applies in one transaction under the change's expected
// version and change id, so a retried or replayed activity never duplicates a row or moves it
// backwards (docs/write-path.md, "One write protocol"). The others read for a workflow's guards,
// start or signal workflows, and prune. This package imports store only.
package activities
