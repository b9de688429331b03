package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
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

// inputError is an argument that fails the schema; its text names the field and the fix.
type inputError struct{ msg string }

func (e *inputError) Error() string { return "Input validation error: " + e.msg }

func invalid(format string, args ...any) error { return &inputError{msg: fmt.Sprintf(format, args...)} }

// normalizeArgs applies docs/rules.md §8.2 and §3.5 to raw tool arguments against schema s: scalars sent as
// strings are coerced where the intent is unambiguous ("0.5" -> 0.5, "true" -> true, "[..]" ->
// array), null for an optional field means absent, unknown properties are dropped, and what is
// still wrong is an *inputError naming the field. It returns the cleaned JSON object, encoded
// by plainJSON.
func normalizeArgs(s *jsonschema.Schema, raw json.RawMessage) (json.RawMessage, error) {
	var v any = map[string]any{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, invalid("arguments are not valid JSON: %v", err)
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, invalid("arguments must be a JSON object")
		}
	}
	out, err := normalize("", s, v)
	if err != nil {
		return nil, err
	}
	return plainJSON(out)
}

// plainJSON is json.Marshal without HTML escaping: <, > and & are written as themselves, not as
// six-byte \u003c escapes, so a size measured on it counts what the text takes (maxCallBytes,
// docs/write-path.md, "Bounded state and payloads").
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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

func fieldName(path string) string {
	if path == "" {
		return "arguments"
	}
	return path
}

func normalize(path string, s *jsonschema.Schema, v any) (any, error) {
	s, nullable := nullableValue(s)
	typ := s.Type
	if v == nil {
		if nullable || typ == "" {
			return nil, nil
		}
		return nil, invalid("%s must be %s, not null", fieldName(path), article(typ))
	}
	var err error
	switch typ {
	case "string":
		switch x := v.(type) {
		case string:
		case json.Number:
			v = x.String()
		case bool:
			v = strconv.FormatBool(x)
		default:
			return nil, invalid("%s must be a string", fieldName(path))
		}
		str := v.(string)
		if strings.ContainsRune(str, 0) {
			return nil, invalid("%s must not contain NUL characters", fieldName(path))
		}
		if s.Format == formatUUID {
			u, err := uuid.Parse(strings.TrimSpace(str))
			if err != nil {
				return nil, invalid("%s must be a uuid, got %s",
					fieldName(path), quote(clipped(str)))
			}
			str = u.String() // uuids are case-insensitive: handlers get the stored, lower-case form
		}
		if err := checkString(path, s, str); err != nil {
			return nil, err
		}
		v = str
	case "integer", "number":
		var n json.Number
		switch x := v.(type) {
		case json.Number:
			n = x
		case string:
			if !decimalNumber.MatchString(strings.TrimSpace(x)) {
				return nil, invalid("%s must be %s, got %q", fieldName(path), article(typ), x)
			}
			n = json.Number(strings.TrimSpace(x))
		default:
			return nil, invalid("%s must be %s", fieldName(path), article(typ))
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, invalid("%s must be a finite number, got %s", fieldName(path), n)
		}
		// Canonical form: a string like "+3" parses but is not a JSON number literal.
		n = json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		// Echoed values read as written where that is short: 2592001, not 2.592001e+06.
		shown := string(n)
		if math.Abs(f) < 1e15 {
			shown = plain(f)
		}
		if s.Minimum != nil && f < *s.Minimum {
			return nil, invalid("%s must be at least %s, got %s", fieldName(path), plain(*s.Minimum), shown)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return nil, invalid("%s must be at most %s, got %s", fieldName(path), plain(*s.Maximum), shown)
		}
		if typ == "integer" {
			if f != math.Trunc(f) {
				return nil, invalid("%s must be a whole number, got %s", fieldName(path), shown)
			}
			if math.Abs(f) > maxSafeInteger {
				return nil, invalid("%s is too large", fieldName(path))
			}
			n = json.Number(strconv.FormatFloat(f, 'f', -1, 64))
		}
		v = n
	case "boolean":
		switch x := v.(type) {
		case bool:
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				v = true
			case "false":
				v = false
			default:
				return nil, invalid("%s must be true or false, got %q", fieldName(path), x)
			}
		default:
			return nil, invalid("%s must be true or false", fieldName(path))
		}
	case "array":
		if x, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(x), "[") {
			if v, err = decodeJSON(x); err != nil {
				return nil, invalid("%s must be an array; the string given is not a JSON array: %v", fieldName(path), err)
			}
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, invalid("%s must be an array", fieldName(path))
		}
		if s.MinItems != nil && len(arr) < *s.MinItems {
			return nil, invalid("%s must have at least %d item(s), got %d", fieldName(path), *s.MinItems, len(arr))
		}
		if s.MaxItems != nil && len(arr) > *s.MaxItems {
			return nil, invalid("%s must have at most %d item(s), got %d", fieldName(path), *s.MaxItems, len(arr))
		}
		out := make([]any, len(arr))
		for i, item := range arr {
			if s.Items == nil {
				out[i] = item
				continue
			}
			if out[i], err = normalize(fmt.Sprintf("%s[%d]", path, i), s.Items, item); err != nil {
				return nil, err
			}
		}
		v = out
	case "object":
		if x, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(x), "{") {
			if v, err = decodeJSON(x); err != nil {
				return nil, invalid("%s must be an object; the string given is not a JSON object: %v", fieldName(path), err)
			}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, invalid("%s must be an object", fieldName(path))
		}
		if s.Properties == nil { // a free-form object (map): keep it as sent
			return obj, nil
		}
		out := map[string]any{}
		for _, name := range propertyOrder(s) {
			ps := s.Properties[name]
			val, present := obj[name]
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			required := slices.Contains(s.Required, name)
			if present && val == nil {
				if _, nullable := nullableValue(ps); !nullable {
					present = false // D2: null for an optional field means absent
				}
			}
			if !present {
				if required {
					return nil, invalid("%s is required", sub)
				}
				continue
			}
			if out[name], err = normalize(sub, ps, val); err != nil {
				return nil, err
			}
		}
		v = out
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		opts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			opts[i] = fmt.Sprint(e)
		}
		return nil, invalid("%s must be one of %s, got %s", fieldName(path), strings.Join(opts, ", "), quote(v))
	}
	return v, nil
}

// decimalNumber is a number written in a string that D2 coerces: decimal digits with an optional
// sign, fraction and exponent ("3", "+3", "0.5", "1e3"), not Go's "0x1p4" or "1_000".
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// plain formats a bound without an exponent.
func plain(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// maxSafeInteger is the largest integer a float64 (and so a JSON number) carries exactly.
const maxSafeInteger = 1 << 53

// clipped shortens a value quoted in an error message.
func clipped(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

func checkString(path string, s *jsonschema.Schema, str string) error {
	n := len([]rune(str))
	if s.MinLength != nil && n < *s.MinLength {
		if *s.MinLength == 1 {
			return invalid("%s must not be empty", fieldName(path))
		}
		return invalid("%s must be at least %d characters long, got %d", fieldName(path), *s.MinLength, n)
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		return invalid("%s must be at most %d characters long, got %d", fieldName(path), *s.MaxLength, n)
	}
	return nil
}

// propertyOrder lists an object schema's properties in declaration order.
func propertyOrder(s *jsonschema.Schema) []string {
	if len(s.PropertyOrder) == len(s.Properties) {
		return s.PropertyOrder
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func decodeJSON(s string) (any, error) {
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	err := d.Decode(&v)
	return v, err
}

func article(typ string) string {
	switch typ {
	case "integer", "object", "array":
		return "an " + typ
	case "":
		return "a value"
	}
	return "a " + typ
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
