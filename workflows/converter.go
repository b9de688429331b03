package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// DataConverter returns the data converter of every Chorus Temporal client, and so of its workers:
// Temporal's default, except that JSON payloads are written without HTML escaping (<, > and &
// as themselves, not as the six bytes of \u003c). A payload then takes the bytes the MCP layer
// counted against the 512 KiB budget of a call, so a call within it stays far below Temporal's
// 2 MB payload limit however much markup it carries (docs/write-path.md, "Bounded state and
// payloads"); escaped, 512 KiB of '<' would be 3 MB. Payloads keep the "json/plain" encoding,
// so histories written with either converter read back with both.
func DataConverter() converter.DataConverter { return dataConverter }

var dataConverter = converter.NewCompositeDataConverter(
	converter.NewNilPayloadConverter(),
	converter.NewByteSlicePayloadConverter(),
	converter.NewProtoJSONPayloadConverter(),
	converter.NewProtoPayloadConverter(),
	plainJSONPayloadConverter{converter.NewJSONPayloadConverter()},
)

// plainJSONPayloadConverter is converter.JSONPayloadConverter writing without HTML escaping.
type plainJSONPayloadConverter struct {
	*converter.JSONPayloadConverter
}

// ToPayload encodes value as JSON, leaving <, > and & unescaped.
func (c plainJSONPayloadConverter) ToPayload(value any) (*commonpb.Payload, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, fmt.Errorf("%w: %v", converter.ErrUnableToEncode, err)
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(c.Encoding())},
		Data: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}, nil
}
