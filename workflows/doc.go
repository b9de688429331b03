// Package workflows holds Chorus's lifecycle workflows (one long-lived workflow per idea,
// proposal and task), their pure state machines, the update and query names, workflow ids,
// search attributes, and the error kinds that travel through Temporal.
//
// It also holds Client, the typed way the rest of Chorus sends updates to those workflows, and
// NewWorker, which registers everything on the task queue.
//
// Workflow code here is deterministic: no I/O, clocks, randomness or map ranging; every side
// effect is an activity from package activities. This package must not import mcp or store
// queries (it may use store types only through activities).
package workflows
