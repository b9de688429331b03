package mcp

import (
	"encoding/json"
	"io"
	"log/slog"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chorus-dev/chorus/perm"
)

// The surface is what reaches the model from a connection: the name, title, description and
// input schema of every listed tool, and the server's instructions, which clients put in the
// model's context with every turn. It has a budget per preset (TestSurfaceBudgets, docs/rules.md
// §3.3); `chorus bench --surface` prints it.

// SurfaceSize is a surface's tool count and bytes.
type SurfaceSize struct {
	Tools int `json:"tools"`
	Bytes int `json:"bytes"`
}

// toolBytes is what one tool adds to the surface: name, title, description and the input
// schema as JSON.
func toolBytes(t *builtTool) int {
	schema, _ := json.Marshal(t.tool.InputSchema)
	return len(t.tool.Name) + len(t.tool.Title) + len(t.tool.Description) + len(schema)
}

// surface measures what a connection with perms and conn lists, instructions included.
func (e *Endpoint) surface(perms perm.Set, conn Conn) SurfaceSize {
	s := SurfaceSize{Bytes: len(instructions)}
	for _, t := range e.listed(perms, conn) {
		s.Tools++
		s.Bytes += toolBytes(t)
	}
	return s
}

// SurfaceRow is one line of SurfaceReport.
type SurfaceRow struct {
	// Name is a preset, or a toolset.
	Name string `json:"name"`
	// Toolsets are the toolsets measured: the preset's default, or all.
	Toolsets string `json:"toolsets"`
	SurfaceSize
}

// SurfaceReport measures the surface of each preset with its default toolsets and with all of
// them, instructions included, and of each toolset on its own (an admin key's tools in it, no
// instructions).
func SurfaceReport() (presets, toolsets []SurfaceRow, err error) {
	e, err := NewEndpoint(&Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "surface")
	if err != nil {
		return nil, nil, err
	}
	for _, p := range perm.PresetNames {
		ps := perm.Preset(p)
		def := defaultSelection(e.tools, []string{p}, ps)
		presets = append(presets,
			SurfaceRow{Name: p, Toolsets: def.String(), SurfaceSize: e.surface(ps, Conn{Toolsets: def})},
			SurfaceRow{Name: p, Toolsets: allToolsetsName, SurfaceSize: e.surface(ps, Conn{Toolsets: allToolsets})})
	}
	for _, ts := range toolsetTable {
		row := SurfaceRow{Name: ts.name, Toolsets: ts.name}
		for _, t := range e.tools {
			if t.spec.Toolset == ts.id {
				row.Tools++
				row.Bytes += toolBytes(t)
			}
		}
		toolsets = append(toolsets, row)
	}
	return presets, toolsets, nil
}

// modelSchema is the input schema as tools/list publishes it: the validation schema without the
// bounds no model meets in practice (strings of 500 characters or more, 200 items or more,
// page numbers up to a million) and without the requestId's length, which the instructions
// state. Calls are still checked against the full schema, and a call past a bound is refused
// with an error naming it; docs/tools.md shows every bound.
func modelSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	c := *s
	if c.MaxLength != nil && *c.MaxLength >= maxShortText {
		c.MaxLength = nil
	}
	if c.MaxItems != nil && *c.MaxItems >= maxItems {
		c.MaxItems = nil
	}
	if c.Maximum != nil && *c.Maximum >= 1_000_000 {
		c.Maximum = nil
	}
	if c.Properties != nil {
		c.Properties = make(map[string]*jsonschema.Schema, len(s.Properties))
		for k, p := range s.Properties {
			c.Properties[k] = modelSchema(p)
		}
		if rid, ok := c.Properties[requestIDField]; ok && s.Type == "object" {
			rid.MinLength, rid.MaxLength = nil, nil
		}
	}
	c.Items = modelSchema(s.Items)
	c.AdditionalProperties = modelSchema(s.AdditionalProperties)
	if s.AnyOf != nil {
		c.AnyOf = make([]*jsonschema.Schema, len(s.AnyOf))
		for i, a := range s.AnyOf {
			c.AnyOf[i] = modelSchema(a)
		}
	}
	return &c
}
