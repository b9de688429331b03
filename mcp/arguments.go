package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
)

// A call's arguments are checked against the tool's input schema (schema.go) and brought to the
// form handlers get: normalizeArgs and its steps, one per JSON type.

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

func fieldName(path string) string {
	if path == "" {
		return "arguments"
	}
	return path
}

// normalize checks one value against its schema and returns it in the form handlers get
// (docs/rules.md §8.2 and §3.5), one step per JSON type, then the schema's enum.
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
		v, err = normalizeString(path, s, v)
	case "integer", "number":
		v, err = normalizeNumber(path, s, v)
	case "boolean":
		v, err = normalizeBool(path, v)
	case "array":
		v, err = normalizeArray(path, s, v)
	case "object":
		var obj map[string]any
		if obj, err = objectValue(path, v); err != nil {
			return nil, err
		}
		if s.Properties == nil { // a free-form object (map): keep it as sent
			return obj, nil
		}
		v, err = normalizeProperties(path, s, obj)
	}
	if err != nil {
		return nil, err
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

// normalizeString takes a string, or a number or boolean written as one, refuses NUL
// characters, lower-cases a uuid and checks the length bounds.
func normalizeString(path string, s *jsonschema.Schema, v any) (any, error) {
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
	return str, nil
}

// normalizeNumber takes a number, or one written in a string, in canonical form, and checks the
// bounds and, for an integer, that it is whole and exact.
func normalizeNumber(path string, s *jsonschema.Schema, v any) (any, error) {
	typ := s.Type
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
	return n, nil
}

// normalizeBool takes a boolean, or "true" or "false" in any case.
func normalizeBool(path string, v any) (any, error) {
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
	return v, nil
}

// normalizeArray takes an array, or one written as a JSON string, checks its length and
// normalizes each item.
func normalizeArray(path string, s *jsonschema.Schema, v any) (any, error) {
	var err error
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
	return out, nil
}

// objectValue takes an object, or one written as a JSON string.
func objectValue(path string, v any) (map[string]any, error) {
	if x, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(x), "{") {
		var err error
		if v, err = decodeJSON(x); err != nil {
			return nil, invalid("%s must be an object; the string given is not a JSON object: %v", fieldName(path), err)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("%s must be an object", fieldName(path))
	}
	return obj, nil
}

// normalizeProperties normalizes an object's declared properties in declaration order: a
// missing required one is refused, and null for an optional one means absent.
func normalizeProperties(path string, s *jsonschema.Schema, obj map[string]any) (any, error) {
	var err error
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
	return out, nil
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
