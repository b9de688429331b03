package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
)

// Issue 19: an empty list in a result is [], never null (a proposal's documentDrafts and
// taskDrafts came back null). The rule is held where every result is encoded (encodeResult),
// and checked here over every tool's result type: a value of it with every pointer set and
// every list of objects holding one element, but every other list nil, goes through
// encodeResult, and no array position of its output schema holds null.

// deepValue builds a value of t with pointers and structs filled in to depth, lists of
// structs with one element and every other list and map nil.
func deepValue(t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if depth == 0 {
		return v
	}
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(deepValue(t.Elem(), depth-1).Addr())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := v.Field(i); f.CanSet() {
				f.Set(deepValue(t.Field(i).Type, depth-1))
			}
		}
	case reflect.Slice:
		if k := t.Elem().Kind(); k == reflect.Struct || k == reflect.Pointer {
			v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), deepValue(t.Elem(), depth-1)))
		}
	}
	return v
}

// nullArrays lists the paths where v holds null although schema s there describes an array.
func nullArrays(path string, s *jsonschema.Schema, v any) []string {
	if s == nil {
		return nil
	}
	if value, nullable := nullableValue(s); nullable {
		if v == nil && value.Type == "array" {
			return []string{path}
		}
		s = value
	}
	switch s.Type {
	case "array":
		list, ok := v.([]any)
		if !ok {
			if v == nil {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i, item := range list {
			out = append(out, nullArrays(fmt.Sprintf("%s[%d]", path, i), s.Items, item)...)
		}
		return out
	case "object":
		obj, _ := v.(map[string]any)
		var out []string
		for name, ps := range s.Properties {
			if x, present := obj[name]; present {
				out = append(out, nullArrays(path+"."+name, ps, x)...)
			}
		}
		slices.Sort(out)
		return out
	}
	return nil
}

func TestResultsHaveNoNullArrays(t *testing.T) {
	checked := 0
	for _, en := range toolTable() {
		typ := en.outType()
		if typ == reflect.TypeFor[textResult]() {
			continue
		}
		schema, err := outputSchema(typ)
		require.NoError(t, err)
		body, err := encodeResult(deepValue(typ, 8).Interface())
		require.NoError(t, err, en.spec().Name)
		var v any
		require.NoError(t, json.Unmarshal(body, &v))
		require.Empty(t, nullArrays(en.spec().Name, schema, v), "%s: lists that are null in %s", en.spec().Name, body)
		checked++
	}
	require.Greater(t, checked, 60)
}
