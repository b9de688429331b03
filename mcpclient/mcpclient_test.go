package mcpclient

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestField(t *testing.T) {
	v := map[string]any{"uuid": "u", "materializedTasks": []any{map[string]any{"taskUuid": "t0"}}}
	got, err := Field(v, "materializedTasks.0.taskUuid")
	require.NoError(t, err)
	require.Equal(t, "t0", got)
	_, err = Field(v, "materializedTasks.3.taskUuid")
	require.ErrorContains(t, err, "not an index")
	_, err = Field(v, "nope")
	require.ErrorContains(t, err, `no field "nope"`)
}
