package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// The JSON Schema subset Chorus publishes (schema.go, "The published subset"): what the
// TypeScript SDK client, the MCP Inspector's portability check and the major model providers'
// function calling all accept (the TypeScript client refused a boolean schema once). checkSubset reports every way a schema strays from it.

var subsetKeywords = map[string]bool{
	"type": true, "description": true, "properties": true, "required": true, "items": true,
	"additionalProperties": true, "enum": true, "minimum": true, "maximum": true, "minLength": true,
	"maxLength": true, "minItems": true, "maxItems": true, "format": true, "anyOf": true,
}

var jsonTypes = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

// checkSubset walks a schema (as JSON decodes it) and returns one line per problem, each with
// its path.
func checkSubset(path string, node any) []string {
	s, isObject := node.(map[string]any)
	if !isObject {
		return []string{fmt.Sprintf("%s: a schema must be an object, got %s", path, compact(node))}
	}
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, path+": "+fmt.Sprintf(format, args...))
	}
	for k := range s {
		if !subsetKeywords[k] {
			bad("keyword %q is outside the published subset", k)
		}
	}
	if branches, ok := s["anyOf"]; ok {
		// The one use of anyOf: a nullable value, {"anyOf": [<value>, {"type": "null"}]}.
		list, _ := branches.([]any)
		for k := range s {
			if k != "anyOf" && k != "description" {
				bad("a nullable schema (anyOf) carries only a description beside anyOf, not %q", k)
			}
		}
		if len(list) != 2 || !isNullSchema(list[1]) || isNullSchema(list[0]) {
			return append(problems, path+`: anyOf must be exactly [<schema of the value>, {"type": "null"}]`)
		}
		return append(problems, checkSubset(path+".anyOf[0]", list[0])...)
	}
	typ, isString := s["type"].(string)
	if !isString || !slices.Contains(jsonTypes, typ) {
		return append(problems, fmt.Sprintf("%s: type must be one JSON type name, got %s", path, compact(s["type"])))
	}
	allowedFor := map[string][]string{
		"properties": {"object"}, "required": {"object"}, "additionalProperties": {"object"},
		"items": {"array"}, "minItems": {"array"}, "maxItems": {"array"},
		"minLength": {"string"}, "maxLength": {"string"}, "format": {"string"}, "enum": {"string"},
		"minimum": {"integer", "number"}, "maximum": {"integer", "number"},
	}
	for k, types := range allowedFor {
		if _, present := s[k]; present && !slices.Contains(types, typ) {
			bad("%q does not apply to type %s", k, typ)
		}
	}
	if f, present := s["format"]; present && f != formatUUID {
		bad("format %s is outside the subset (only %q)", compact(f), formatUUID)
	}
	if enum, present := s["enum"]; present {
		list, _ := enum.([]any)
		if len(list) == 0 {
			bad("enum must list at least one value")
		}
		for _, v := range list {
			if _, ok := v.(string); !ok {
				bad("enum values must be strings, got %s", compact(v))
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	if req, present := s["required"]; present {
		list, _ := req.([]any)
		for _, r := range list {
			name, _ := r.(string)
			if _, ok := props[name]; !ok {
				bad("required names %s, which is not a property", compact(r))
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		problems = append(problems, checkSubset(path+".properties."+name, props[name])...)
	}
	if ap, present := s["additionalProperties"]; present && ap != false { // false: a closed object
		problems = append(problems, checkSubset(path+".additionalProperties", ap)...)
	}
	if typ == "array" {
		items, present := s["items"]
		if !present {
			bad("an array must say what its items are")
		} else {
			problems = append(problems, checkSubset(path+".items", items)...)
		}
	}
	return problems
}

func isNullSchema(node any) bool {
	s, ok := node.(map[string]any)
	return ok && len(s) == 1 && s["type"] == "null"
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// publishedTools is every tool as tools/list shows it, decoded as a client would.
func publishedTools(t *testing.T) []map[string]any {
	t.Helper()
	ep, err := NewEndpoint(&Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	var out []map[string]any
	for _, bt := range ep.tools {
		b, err := json.Marshal(bt.tool)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		out = append(out, m)
	}
	return out
}

func TestPublishedSchemasStayInSubset(t *testing.T) {
	for _, tl := range publishedTools(t) {
		name := tl["name"].(string)
		in, ok := tl["inputSchema"].(map[string]any)
		require.True(t, ok, "%s has no inputSchema object", name)
		require.Equal(t, "object", in["type"], "%s: inputSchema must be an object schema", name)
		problems := checkSubset(name+".inputSchema", in)
		if out, present := tl["outputSchema"]; present {
			m, _ := out.(map[string]any)
			require.Equal(t, "object", m["type"], "%s: outputSchema must be an object schema", name)
			problems = append(problems, checkSubset(name+".outputSchema", out)...)
		}
		require.Empty(t, problems, "%s strays from the published schema subset", name)
	}
}

// The checker itself must catch what clients reject, or the test above proves nothing.
func TestSubsetCheckerRejectsWhatClientsReject(t *testing.T) {
	cases := map[string]string{
		"boolean schema":            `{"type":"object","properties":{"a":true}}`,
		"true additionalProperties": `{"type":"object","additionalProperties":true}`,
		"type array":                `{"type":["null","string"]}`,
		"untyped":                   `{"description":"anything"}`,
		"unknown keyword":           `{"type":"string","pattern":"^a"}`,
		"oneOf":                     `{"oneOf":[{"type":"string"},{"type":"integer"}]}`,
		"anyOf not nullable":        `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		"array without items":       `{"type":"array"}`,
		"number enum":               `{"type":"integer","enum":[1,2]}`,
		"other format":              `{"type":"string","format":"email"}`,
		"required not a property":   `{"type":"object","properties":{},"required":["x"]}`,
		"nested problem":            `{"type":"object","properties":{"a":{"type":"array","items":{"type":["string"]}}}}`,
	}
	for name, schema := range cases {
		var node any
		require.NoError(t, json.Unmarshal([]byte(schema), &node), name)
		require.NotEmpty(t, checkSubset("s", node), "%s: %s should be refused", name, schema)
	}
	var good any
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"a":{"description":"d","anyOf":[
		{"type":"string","format":"uuid"},{"type":"null"}]},"b":{"type":"array","items":{"type":"string","enum":["x"]}}},
		"required":["b"],"additionalProperties":false}`), &good))
	require.Empty(t, checkSubset("s", good))
}

// Every input that names an entity is a UUID (format "uuid"), so one rule makes it
// case-insensitive and refuses what is not a uuid, at any depth. The labels a
// caller invents for chorus_create_tasks are the one exception: they are not uuids.
func TestEveryEntityReferenceInputIsAUUID(t *testing.T) {
	named := regexp.MustCompile(`(?i)(uuid|uuids|dependsOn)$`)
	labels := map[string]bool{
		"chorus_create_tasks.inputSchema.properties.tasks.items.properties.draftUuid":           true,
		"chorus_create_tasks.inputSchema.properties.tasks.items.properties.dependsOnDraftUuids": true,
	}
	var walk func(path string, s map[string]any, found *int)
	walk = func(path string, s map[string]any, found *int) {
		if branches, ok := s["anyOf"].([]any); ok {
			s = branches[0].(map[string]any)
		}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			ps := p.(map[string]any)
			sub := path + ".properties." + name
			if named.MatchString(name) && !labels[sub] {
				v := ps
				if branches, ok := v["anyOf"].([]any); ok {
					v = branches[0].(map[string]any)
				}
				if v["type"] == "array" {
					v = v["items"].(map[string]any)
				}
				require.Equal(t, formatUUID, v["format"], "%s names entities but is not a UUID", sub)
				*found++
			}
			walk(sub, ps, found)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+".items", items, found)
		}
	}
	found := 0
	for _, tl := range publishedTools(t) {
		walk(tl["name"].(string)+".inputSchema", tl["inputSchema"].(map[string]any), &found)
	}
	require.Greater(t, found, 50, "the walk should meet every uuid input")
}

// Item 5 of issue 19 and case 08: every input converts intact in every mainstream client. OpenAI's
// strict mode refuses an open object (chorus_get_my_assignments had one with no properties) and
// sends every optional key, as null when unused; LangChain's adapter erases the type of an
// anyOf-with-null property. So no input schema has anyOf (no argument gives null a meaning of its
// own: "detach" and "clear" are explicit arguments) and every input object is closed.
func TestInputSchemasConvertStrictly(t *testing.T) {
	var walk func(path string, s map[string]any) []string
	walk = func(path string, s map[string]any) []string {
		var problems []string
		if _, ok := s["anyOf"]; ok {
			problems = append(problems, path+": anyOf in an input (null must mean absent; make a command an explicit argument)")
		}
		if _, ok := s["type"].(string); !ok {
			problems = append(problems, fmt.Sprintf("%s: type must be one JSON type name, got %s", path, compact(s["type"])))
		}
		if s["type"] == "object" && s["additionalProperties"] != false {
			problems = append(problems, fmt.Sprintf("%s: an input object must be closed (additionalProperties false), got %s",
				path, compact(s["additionalProperties"])))
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			problems = append(problems, walk(path+".properties."+name, props[name].(map[string]any))...)
		}
		if items, ok := s["items"].(map[string]any); ok {
			problems = append(problems, walk(path+".items", items)...)
		}
		branches, _ := s["anyOf"].([]any)
		for _, b := range branches {
			problems = append(problems, walk(path+".anyOf", b.(map[string]any))...)
		}
		return problems
	}
	var problems []string
	for _, tl := range publishedTools(t) {
		problems = append(problems, walk(tl["name"].(string)+".inputSchema", tl["inputSchema"].(map[string]any))...)
	}
	require.Empty(t, problems)
}
