package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// chorus agent create, key create and key revoke run the app use cases the console runs, as an
// operator: the agent gets the presets, bits and owner asked, each key works until revoked.
func TestAgentAndKeyCommandsRunTheUseCases(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	var made struct {
		UUID        string   `json:"uuid"`
		Roles       []string `json:"roles"`
		Permissions []string `json:"permissions"`
		OwnerUUID   *string  `json:"ownerUuid"`
		APIKey      string   `json:"apiKey"`
	}
	out := runChorus(t, "--data-dir", dir, "agent", "create", "--name", "Planner", "--preset", "pm", "--permission", "Idea:Admin", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &made))
	assert.Equal(t, []string{"pm_agent"}, made.Roles)
	assert.Equal(t, []string{"idea:admin"}, made.Permissions)
	require.NotNil(t, made.OwnerUUID)
	assert.Equal(t, boot.Owner.UUID, *made.OwnerUUID, "by default the company owner owns it")
	_, err := st.Authenticate(ctx, made.APIKey)
	require.NoError(t, err)
	assert.Contains(t, runChorus(t, "--data-dir", dir, "agent", "list"), "Planner")

	var key struct {
		UUID   string `json:"uuid"`
		APIKey string `json:"apiKey"`
	}
	out = runChorus(t, "--data-dir", dir, "key", "create", "--agent", made.UUID, "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &key))
	_, err = st.Authenticate(ctx, key.APIKey)
	require.NoError(t, err)
	assert.Contains(t, runChorus(t, "--data-dir", dir, "key", "revoke", key.UUID), "Revoked key "+key.UUID)
	_, err = st.Authenticate(ctx, key.APIKey)
	assert.ErrorIs(t, err, store.ErrKeyRevoked)
	_, err = st.Authenticate(ctx, made.APIKey)
	assert.NoError(t, err, "the agent's other key still works")
}
