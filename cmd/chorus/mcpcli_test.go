package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCallArguments(t *testing.T) {
	got, err := callArguments(nil, []string{"title=Dark mode", "storyPoints=2.5", "isContainer=true", `inputUuids=["a","b"]`, "note="})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"title": "Dark mode", "storyPoints": 2.5, "isContainer": true,
		"inputUuids": []any{"a", "b"}, "note": ""}, got)
	got, err = callArguments(nil, []string{`{"name":"x"}`})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "x"}, got)
	got, err = callArguments(strings.NewReader(`{"a":1}`), []string{"-"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": float64(1)}, got)
	_, err = callArguments(nil, []string{"oops"})
	require.ErrorContains(t, err, "not key=value")
	_, err = callArguments(nil, []string{"{broken"})
	require.ErrorContains(t, err, "not a JSON object")
}

func TestPickField(t *testing.T) {
	v := map[string]any{"uuid": "u", "materializedTasks": []any{map[string]any{"taskUuid": "t0"}}}
	got, err := pickField(v, "materializedTasks.0.taskUuid")
	require.NoError(t, err)
	require.Equal(t, "t0", got)
	_, err = pickField(v, "materializedTasks.3.taskUuid")
	require.ErrorContains(t, err, "not an index")
	_, err = pickField(v, "nope")
	require.ErrorContains(t, err, `no field "nope"`)
}
