package mcp

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chorus-dev/chorus/perm"
)

// ToolsReference renders docs/tools.md from the tool table: per tool its permission,
// annotations, description, arguments (from the published input schema) and result keys. The
// file is generated, never edited: TestToolsReferenceIsCurrent fails when it is stale, and
// `go generate ./mcp` (or that test with -update) rewrites it.
func ToolsReference() (string, error) {
	ep, err := NewEndpoint(&Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "docs")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`# Chorus tools

<!-- Generated from the tool table (mcp/table.go) by ` + "`go generate ./mcp`" + `. Do not edit: change the
table, its input and output types or their descriptions, and regenerate. TestToolsReferenceIsCurrent fails
while this file is stale. -->

Every tool Chorus serves at ` + "`POST /api/mcp`" + `, in the order ` + "`tools/list`" + ` gives them. A tool
whose permission is *public* is listed for every key; the others only for keys holding that bit
([rules.md](rules.md) §6.1, §6.2). A connection lists the tools of the toolsets it selects, and
in read-only mode only those marked read-only here (§3.3). Project access applies to all of them
(§6.3). Every tool that is not read-only also takes an optional ` + "`requestId`" + ` (§8.5). Refusals
are tool results with ` + "`isError: true`" + ` and one sentence of text (§3.7); the error texts each tool
relies on are in [rules.md](rules.md). The complete schemas, including the results', are in
` + "`mcp/testdata/tools.golden.json`" + ` (as ` + "`tools/list`" + ` publishes them: the bounds below that no model
meets in practice are checked but not published).

`)
	b.WriteString("| Toolset | What it holds |\n|---|---|\n")
	for _, ts := range toolsetTable {
		fmt.Fprintf(&b, "| `%s` | %s |\n", ts.name, ts.about)
	}
	fmt.Fprintf(&b, "\n%d tools.\n\n| Tool | Toolset | Permission | Kind |\n|---|---|---|---|\n", len(ep.tools))
	for _, t := range ep.tools {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", t.spec.Name, t.spec.Name, t.spec.Toolset, permName(t.spec.Perm), kindName(t.spec))
	}
	for _, t := range ep.tools {
		b.WriteString("\n")
		writeTool(&b, t)
	}
	return b.String(), nil
}

func permName(p perm.Bit) string {
	if p == perm.Public {
		return "public"
	}
	return "`" + p.String() + "`"
}

func kindName(s toolSpec) string {
	switch s.Effect {
	case reads:
		return "read"
	case destroys:
		return "destructive"
	}
	if s.Idempotent {
		return "write (idempotent)"
	}
	return "write"
}

func writeTool(b *strings.Builder, t *builtTool) {
	mt := t.tool
	fmt.Fprintf(b, "## <a id=\"%s\"></a>`%s`", mt.Name, mt.Name)
	if mt.Title != "" {
		fmt.Fprintf(b, ": %s", mt.Title)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(b, "Toolset: `%s`. Permission: %s. Annotations: %s.", t.spec.Toolset, permName(t.spec.Perm), annotationList(t))
	if t.spec.ReadOnlyForm {
		b.WriteString(" Read-only connections list it too, and there it changes nothing.")
	}
	b.WriteString("\n\n")
	b.WriteString(strings.TrimSpace(mt.Description) + "\n\n")
	in := t.inputSchema
	var rows [][4]string
	if in != nil {
		rows = argRows("", in)
	}
	takesRequestID := slices.ContainsFunc(rows, func(r [4]string) bool { return r[0] == requestIDField })
	rows = slices.DeleteFunc(rows, func(r [4]string) bool { return r[0] == requestIDField })
	if len(rows) == 0 {
		b.WriteString("No arguments.\n")
	} else {
		b.WriteString("| Argument | Type | Required | Description |\n|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r[0], r[1], r[2], cell(r[3]))
		}
	}
	if takesRequestID {
		b.WriteString("\nAlso takes `requestId` (1 to 128 characters): a retry with the same one returns the first result and changes nothing.\n")
	}
	out, _ := mt.OutputSchema.(*jsonschema.Schema)
	if out == nil {
		b.WriteString("\nResult: a sentence of text.\n")
		return
	}
	var keys []string
	for _, k := range propertyNames(out) {
		keys = append(keys, "`"+k+"`")
	}
	fmt.Fprintf(b, "\nResult: an object with %s.\n", strings.Join(keys, ", "))
}

func annotationList(t *builtTool) string {
	a := t.tool.Annotations
	var hints []string
	if a.ReadOnlyHint {
		hints = append(hints, "readOnlyHint")
	}
	if a.DestructiveHint != nil && *a.DestructiveHint {
		hints = append(hints, "destructiveHint")
	}
	if a.IdempotentHint {
		hints = append(hints, "idempotentHint")
	}
	if a.OpenWorldHint != nil && !*a.OpenWorldHint {
		hints = append(hints, "openWorldHint false")
	}
	return strings.Join(hints, ", ")
}

// argRows lists the properties of an object schema, with the fields of nested objects (and of
// arrays of objects) under dotted names: tasks[].title.
func argRows(prefix string, s *jsonschema.Schema) [][4]string {
	var rows [][4]string
	for _, name := range propertyNames(s) {
		p := s.Properties[name]
		req := "no"
		if slices.Contains(s.Required, name) {
			req = "yes"
		}
		path := prefix + name
		rows = append(rows, [4]string{path, typeText(p), req, p.Description})
		v := valueSchema(p)
		switch {
		case v.Type == "object" && len(v.Properties) > 0:
			rows = append(rows, argRows(path+".", v)...)
		case v.Type == "array" && v.Items != nil && valueSchema(v.Items).Type == "object" && len(valueSchema(v.Items).Properties) > 0:
			rows = append(rows, argRows(path+"[].", valueSchema(v.Items))...)
		}
	}
	return rows
}

// propertyNames lists an object schema's properties in their published order.
func propertyNames(s *jsonschema.Schema) []string {
	names := slices.Clone(s.PropertyOrder)
	var rest []string
	for k := range s.Properties {
		if !slices.Contains(names, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// valueSchema is the schema of a value that may also be null (the published nullable form).
func valueSchema(s *jsonschema.Schema) *jsonschema.Schema {
	for _, a := range s.AnyOf {
		if a.Type != "null" {
			return a
		}
	}
	return s
}

// typeText describes a schema in a few words: type, format, bounds, enum, nullability.
func typeText(s *jsonschema.Schema) string {
	v := valueSchema(s)
	t := v.Type
	if t == "" && len(v.Types) > 0 {
		t = strings.Join(v.Types, " or ")
	}
	if v.Format != "" {
		t += " (" + v.Format + ")"
	}
	if v.Type == "array" && v.Items != nil {
		t = "array of " + typeText(v.Items)
		if strings.Contains(t[len("array of "):], ",") {
			t = "array of (" + typeText(v.Items) + ")"
		}
	}
	var extra []string
	if len(v.Enum) > 0 {
		var vals []string
		for _, e := range v.Enum {
			vals = append(vals, fmt.Sprintf("`%v`", e))
		}
		extra = append(extra, "one of "+strings.Join(vals, ", "))
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	if v.Minimum != nil && v.Maximum != nil {
		extra = append(extra, num(v.Minimum)+" to "+num(v.Maximum))
	} else if v.Minimum != nil {
		extra = append(extra, "at least "+num(v.Minimum))
	} else if v.Maximum != nil {
		extra = append(extra, "at most "+num(v.Maximum))
	}
	bounds := func(lo, hi *int, unit string) {
		switch {
		case lo != nil && hi != nil:
			extra = append(extra, fmt.Sprintf("%d to %d %s", *lo, *hi, unit))
		case lo != nil:
			extra = append(extra, fmt.Sprintf("at least %d %s", *lo, unit))
		case hi != nil:
			extra = append(extra, fmt.Sprintf("at most %d %s", *hi, unit))
		}
	}
	bounds(v.MinLength, v.MaxLength, "characters")
	bounds(v.MinItems, v.MaxItems, "items")
	if len(extra) > 0 {
		t += ", " + strings.Join(extra, ", ")
	}
	if v != s {
		t += ", or null"
	}
	return t
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
