package mcp

import (
	"time"

	"github.com/chorus-dev/chorus/store"
)

// ReferenceView is the ReferenceArtifact JSON (docs/rules.md §1.16) read back inline as references[] on
// ideas, proposals and tasks, oldest first. No tool creates references yet, so the lists are
// empty; the type fixes the published output schema.
type ReferenceView struct {
	UUID       string          `json:"uuid"`
	TargetType string          `json:"targetType" jsonschema:"idea, proposal or task"`
	TargetUUID string          `json:"targetUuid"`
	Type       string          `json:"type" jsonschema:"docs, repo, issue_pr or paper_blog"`
	URL        string          `json:"url"`
	Title      string          `json:"title"`
	Notes      *string         `json:"notes"`
	CreatedBy  *store.ActorRef `json:"createdBy"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

// AttachmentView is one entry of an idea's attachments (docs/rules.md §1.6; not settable through MCP).
type AttachmentView struct {
	Type string `json:"type"`
	URL  string `json:"url"`
	Name string `json:"name"`
}
