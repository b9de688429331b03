package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chorus-dev/chorus/workflows"
)

// NullableString is an optional argument where null means something ("detach", "clear"): Set
// tells absent from present, and Value is nil for an explicit null.
type NullableString struct {
	Set   bool
	Value *string
}

// UnmarshalJSON records that the field was present.
func (n *NullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Value = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	n.Value = &s
	return nil
}

// MarshalJSON writes the value or null.
func (n NullableString) MarshalJSON() ([]byte, error) { return json.Marshal(n.Value) }

func init() {
	schemaTypeOverrides[reflect.TypeFor[NullableString]()] = &jsonschema.Schema{Types: []string{"null", "string"}}
}

// actor is the caller as workflows know it.
func actor(p Principal) workflows.Actor {
	return workflows.Actor{Type: "agent", UUID: p.Caller.AgentUUID, Name: p.Caller.AgentName,
		CompanyUUID: p.Caller.CompanyUUID, OwnerUUID: p.Caller.OwnerUUID}
}

// flowCall carries the requestId of a tool call to the workflow client.
func flowCall(c *Call) workflows.Call { return workflows.Call{RequestID: c.RequestID} }
