package mcp

import (
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// UUID is an argument that names an entity by its uuid. Its schema is a string with format
// "uuid"; normalizeArgs refuses anything that is not a uuid, naming the field, and hands the
// handler the canonical lower-case form, whatever case the caller sent and however deep the
// field sits (uuids are case-insensitive everywhere: TestUUIDsAreCaseInsensitiveAtAnyDepth). Outputs use plain strings.
type UUID string

// String returns the uuid as stored: lower case.
func (u UUID) String() string { return string(u) }

// uuidStrings converts a list of uuid arguments for the store and the workflows.
func uuidStrings(us []UUID) []string {
	if us == nil {
		return nil
	}
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = string(u)
	}
	return out
}

// formatUUID is the JSON Schema format of uuid arguments.
const formatUUID = "uuid"

// JSONObject is a free-form JSON object in a result (an activity's value), or null. Its schema
// is a bare object, which every client accepts.
type JSONObject map[string]any

func init() {
	schemaTypeOverrides[reflect.TypeFor[JSONObject]()] = &jsonschema.Schema{Types: []string{"null", "object"}}
	schemaTypeOverrides[reflect.TypeFor[UUID]()] = &jsonschema.Schema{Type: "string", Format: formatUUID}
}
