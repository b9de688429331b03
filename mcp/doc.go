// Package mcp is Chorus's agent-facing surface: the MCP endpoint (POST /api/mcp, stateless
// Streamable HTTP via github.com/modelcontextprotocol/go-sdk, imported as mcpsdk), API-key
// authentication, the tool list of each connection (permission set, toolsets, read-only mode; toolset.go, conn.go),
// the playbook prompts, and the tool table with its typed inputs and
// outputs (docs/rules.md §3, §4).
//
// It is a front end over package app, where the use cases are: a tool handler maps its
// arguments to a use case's input and its result or refusal to the tool's answer, and keeps the
// transport's own concerns (schemas, the requestId bookkeeping of runOnce, the wording of
// errors through app.Classify, views and their 64 KiB budget). It reads store only for views
// (names through store.Namer) and the request ledger, never writes lifecycle rows, never builds
// JSON by hand, and knows no SQL.
package mcp

// docs/tools.md is generated from the tool table (toolsdoc.go); regenerate it after changing a tool.
//go:generate go test -run TestToolsReferenceIsCurrent -update .
