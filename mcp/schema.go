package mcp

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Input schemas are inferred from the tool's input struct by jsonschema-go (json tags give the
// names, omitempty makes a field optional, the `jsonschema` tag is the description) and then
// tightened from a `chorus` tag, because jsonschema-go reads no constraints from tags:
//
//	Priority string `json:"priority,omitempty" jsonschema:"..." chorus:"enum=low|medium|high"`
//
// Keys: enum=a|b|c (on an array: its items), min=N, max=N (numbers), minLength=N, maxLength=N (strings, in characters),
// minItems=N, maxItems=N (arrays). Fields of type UUID get format "uuid". No input is nullable:
// null for any argument means absent (docs/rules.md §8.2), and a command such as "detach" or
// "clear" is an explicit argument (detachParent: true), so a strict-mode client that sends
// every key, as null when unused, changes nothing it did not mean to (case 08).
//
// Every schema is then rewritten into the subset Chorus publishes (publishable, below), which
// the TypeScript SDK client, the MCP Inspector and the major model providers' function calling
// all accept.

var schemaTypeOverrides = map[reflect.Type]*jsonschema.Schema{}

// inputSchema infers and tightens the input schema of T, which must be a struct. The caller
// makes it publishable, then closes it (closeObjects), once it has added the common properties.
func inputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypeOverrides})
	if err != nil {
		return nil, err
	}
	if err := tighten(t, s); err != nil {
		return nil, err
	}
	return s, nil
}

// outputSchema infers the publishable schema of a tool's structured result.
func outputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypeOverrides})
	if err != nil {
		return nil, err
	}
	publishable(s)
	return s, nil
}

// The published subset of JSON Schema (held for every tool by TestPublishedSchemasStayInSubset):
//
//   - every schema is an object: no boolean schema (true or false) at any depth;
//   - every schema has a "type" that is one string, or is a nullable value written
//     {"anyOf": [<schema of the value>, {"type": "null"}]} with an optional "description";
//   - keywords are limited to type, description, properties, required, items,
//     additionalProperties (an object schema, for maps), enum (strings), minimum, maximum,
//     minLength, maxLength, minItems, maxItems, format ("uuid") and anyOf (the nullable form).
//
// Optional fields are simply not required. Input schemas have no nullable field (null for an
// optional argument means absent, docs/rules.md §8.2) and every input object is closed
// ("additionalProperties": false, which OpenAI's strict mode needs), though the server still
// ignores unknown arguments (docs/rules.md §3.5). Output objects are open: results may gain fields.

// publishable rewrites an inferred schema, in place, into the published subset: type arrays
// ["null", T] become the anyOf form, and "additionalProperties": false is dropped.
func publishable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if isFalseSchema(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		publishable(p)
	}
	publishable(s.Items)
	publishable(s.AdditionalProperties)
	for _, b := range s.AnyOf {
		publishable(b)
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		value := *s
		value.Types, value.Description = nil, ""
		value.Type = s.Types[0]
		if value.Type == "null" {
			value.Type = s.Types[1]
		}
		*s = jsonschema.Schema{Description: s.Description,
			AnyOf: []*jsonschema.Schema{&value, {Type: "null"}}}
	}
}

// closeObjects marks every object of an input schema that lists its properties (or has none)
// as closed: "additionalProperties": false. A free-form map keeps its value schema.
func closeObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Type == "object" && s.AdditionalProperties == nil {
		s.AdditionalProperties = falseSchema()
	}
	for _, p := range s.Properties {
		closeObjects(p)
	}
	closeObjects(s.Items)
	for _, b := range s.AnyOf {
		closeObjects(b)
	}
}

// falseSchema is the schema that matches nothing, written false.
func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// isFalseSchema reports whether s is the schema that matches nothing, which jsonschema-go
// writes as false.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

// nullableValue returns the schema of the value of a nullable schema (the anyOf form) and true,
// or s itself and false.
func nullableValue(s *jsonschema.Schema) (*jsonschema.Schema, bool) {
	if len(s.AnyOf) == 2 && s.AnyOf[1].Type == "null" {
		return s.AnyOf[0], true
	}
	return s, false
}

// tighten walks the Go type beside its inferred schema: it removes the implicit null that
// pointers and slices get, drops "additionalProperties" (closeObjects sets it once the common
// properties are in), and applies the chorus tag's constraints.
func tighten(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		s.AdditionalProperties = nil
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				if err := tighten(f.Type, s); err != nil { // promoted fields live in s itself
					return err
				}
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ps := s.Properties[name]
			if ps == nil {
				continue
			}
			for kv := range strings.SplitSeq(f.Tag.Get("chorus"), ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
				if err := applyConstraint(ps, k, v); err != nil {
					return fmt.Errorf("field %s: %w", name, err)
				}
			}
			if len(ps.Types) == 2 && ps.Types[0] == "null" {
				ps.Type, ps.Types = ps.Types[1], nil
			}
			applyDefaultBounds(name, ps)
			if err := tighten(f.Type, ps); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if s.Items != nil && t.Elem().Kind() != reflect.Uint8 {
			return tighten(t.Elem(), s.Items)
		}
	}
	return nil
}

// Every string and array argument is bounded, so no input can outgrow what a database row or a
// Temporal payload holds; a chorus tag can set a tighter bound.
const (
	maxShortText = 500     // titles, names, labels, ids
	maxLongText  = 100_000 // content, descriptions, reports, notes (characters)
	maxOtherText = 10_000
	maxItems     = 200
)

func applyDefaultBounds(name string, s *jsonschema.Schema) {
	typ, _ := schemaType(s)
	switch typ {
	case "string":
		if s.MaxLength != nil || len(s.Enum) > 0 || s.Format == formatUUID {
			return
		}
		n := maxOtherText
		switch {
		case name == "title" || name == "name" || name == "label" || name == "id" || name == "questionId" ||
			name == "selectedOptionId" || strings.HasSuffix(name, "Uuid") || strings.HasSuffix(name, "Uuids"):
			n = maxShortText
		case name == "content" || name == "description" || name == "report" || name == "text" ||
			name == "customText" || name == "reviewNote" || name == "reason" || name == "summary" ||
			name == "evidence" || name == "devEvidence":
			n = maxLongText
		}
		s.MaxLength = &n
	case "array":
		if s.MaxItems == nil {
			n := maxItems
			s.MaxItems = &n
		}
		if s.Items != nil {
			if t, _ := schemaType(s.Items); t == "string" && s.Items.MaxLength == nil {
				applyDefaultBounds(name, s.Items)
			}
		}
	}
}

func applyConstraint(s *jsonschema.Schema, key, val string) error {
	num := func() (float64, error) { return strconv.ParseFloat(val, 64) }
	count := func() (*int, error) { n, err := strconv.Atoi(val); return &n, err }
	var err error
	switch key {
	case "":
	case "enum":
		if t, _ := schemaType(s); t == "array" && s.Items != nil {
			s = s.Items // an array's enum constrains its items
		}
		for v := range strings.SplitSeq(val, "|") {
			s.Enum = append(s.Enum, v)
		}
	case "min":
		var f float64
		f, err = num()
		s.Minimum = &f
	case "max":
		var f float64
		f, err = num()
		s.Maximum = &f
	case "minLength":
		s.MinLength, err = count()
	case "maxLength":
		s.MaxLength, err = count()
	case "minItems":
		s.MinItems, err = count()
	case "maxItems":
		s.MaxItems, err = count()
	default:
		return fmt.Errorf("unknown chorus tag key %q", key)
	}
	return err
}

// schemaType is the JSON type of an inferred schema and whether it admits null, before
// publishable rewrites type arrays.
func schemaType(s *jsonschema.Schema) (main string, nullable bool) {
	if s.Type != "" {
		return s.Type, false
	}
	for _, t := range s.Types {
		if t == "null" {
			nullable = true
		} else if main == "" {
			main = t
		}
	}
	return main, nullable
}
