package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
)

// Payloads are written without HTML escaping, in the default converter's encoding, and read
// back from either converter's payloads (docs/write-path.md, "Bounded state and payloads").
func TestDataConverterWritesMarkupAsIs(t *testing.T) {
	in := CreateIdeaInput{Title: "<a & b>", Content: ptr("x < y && y > z")}
	p, err := DataConverter().ToPayload(in)
	require.NoError(t, err)
	require.Contains(t, string(p.GetData()), `"title":"<a & b>"`)
	require.Equal(t, converter.MetadataEncodingJSON, string(p.GetMetadata()[converter.MetadataEncoding]))

	escaped, err := converter.GetDefaultDataConverter().ToPayload(in)
	require.NoError(t, err)
	require.Contains(t, string(escaped.GetData()), `\u003c`)
	require.Greater(t, len(escaped.GetData()), len(p.GetData()))
	var back, fromDefault CreateIdeaInput
	require.NoError(t, DataConverter().FromPayload(escaped, &back))
	require.Equal(t, in, back)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &fromDefault))
	require.Equal(t, in, fromDefault)
}
