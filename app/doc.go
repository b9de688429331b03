// Package app holds Chorus's use cases: what a caller can do (create a proposal, claim the next
// task, approve a proposal, ...), each as one function that takes the caller (Request) and a typed
// input and returns a typed result or a refusal. A use case does the access checks, the rules that
// need the database, the workflow command and its follow-up records, in that order, as one step.
//
// Front ends are adapters over these functions: package mcp maps tool arguments to inputs and
// results and refusals to MCP answers; the web console will be a second adapter on the same
// functions, so a check, a refusal text and an exactly-once guarantee are written here once.
//
// Layering (cmd/chorus TestImportDirection): front ends -> app -> workflows -> activities ->
// store. app reads through store and changes lifecycle state only through the workflows client;
// it knows no transport (no MCP, no HTTP) and no SQL.
package app
