// Package ops compares every lifecycle entity's workflow with its rows and makes them agree
// again (docs/write-path.md, "Check and repair"): what `chorus ops check` and `chorus ops repair`
// run. It reads workflow state through the `state` query (so workers must be running) and
// DescribeWorkflowExecution, and rows through the store; it writes only through the store's
// guarded repair and by starting workflows. It knows workflows and store; nothing imports it but
// cmd/chorus and bench (the ops check phase of `chorus bench`).
//
// Both are meant for a live system, where commands keep moving rows and workflows. A workflow is
// applying a command when it has a pending activity: its row may then be one version ahead of
// its state, legitimately. So each entity is observed as a consistent pair (row, then the
// workflow's description and state, then the row again, unchanged), a difference counts only
// when two such pairs in a row show it and no change is in flight, and an entity that keeps
// changing through every attempt is reported as busy, not as a finding (observe, judge).
//
// Files: ops.go holds the package's types (the kinds of finding, Finding, Report, Ops and its
// options); check.go runs a check (Check, CheckReport, CheckPass, CheckIncremental: a pass, its
// stages and check marks); observe.go observes one entity (its rows, its workflow's description
// and state, and the glance at its memo digest); judge.go judges observations (judge, compare,
// inspect); repair.go resolves findings (Repair). triage.go lists failed and stuck runs, and
// cluster.go binds a database to its Temporal cluster.
package ops
