// Package mcp is Chorus's agent-facing surface: the MCP endpoint (POST /api/mcp, stateless
// Streamable HTTP via github.com/modelcontextprotocol/go-sdk, imported as mcpsdk), API-key
// authentication, the tool list of each connection (permission set, toolsets, read-only mode; toolset.go, conn.go),
// the playbook prompts, and the tool table with its typed inputs and
// outputs (docs/rules.md §3, §4).
//
// It knows the tool contracts and error texts of docs/rules.md. Reads go to package store; lifecycle changes
// go to package workflows as updates; mcp never writes lifecycle rows itself and never builds
// JSON by hand. It must not know SQL or Temporal internals beyond the workflows client.
package mcp

// docs/tools.md is generated from the tool table (toolsdoc.go); regenerate it after changing a tool.
//go:generate go test -run TestToolsReferenceIsCurrent -update .
