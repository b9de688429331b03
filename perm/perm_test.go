package perm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPresets(t *testing.T) {
	require.Len(t, Preset(DeveloperAgent).Bits(), 6)
	require.Len(t, Preset(PMAgent).Bits(), 10)
	require.Len(t, Preset(AdminAgent).Bits(), 15)
	require.Equal(t, Preset(DeveloperAgent), Preset("developer"), "legacy alias")
	require.True(t, Preset(DeveloperAgent).Has(TaskWrite))
	require.False(t, Preset(DeveloperAgent).Has(TaskAdmin))
	require.False(t, Preset(PMAgent).Has(ProposalAdmin))
	require.False(t, Preset(PMAgent).Has(IdeaAdmin))
	require.Zero(t, Preset("nope"))
}

func TestNoBitImpliesAnother(t *testing.T) {
	s := Effective(nil, []string{"task:admin"})
	require.True(t, s.Has(TaskAdmin))
	require.False(t, s.Has(TaskWrite), "task:admin does not grant task:write")
	require.True(t, s.Has(Public))
	require.False(t, s.Has(0), "the zero Bit is not a permission")
}

func TestEffectiveIgnoresBadCustomBits(t *testing.T) {
	s := Effective([]string{"pm_agent", "wizard"}, []string{"idea:admin", "idea:root", "bogus"})
	require.Equal(t, 11, len(s.Bits()))
	require.True(t, s.Has(IdeaAdmin))
}

func TestParseAndStrings(t *testing.T) {
	for _, r := range Resources {
		for _, a := range Actions {
			b, err := Parse(" " + r + ":" + a + " ")
			require.NoError(t, err)
			require.Equal(t, r+":"+a, b.String())
			require.Equal(t, r, b.Resource())
			require.Equal(t, a, b.Action())
		}
	}
	for _, bad := range []string{"", "task", "task:", "task:delete", "tasks:read", "task:read:x"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, map[string][]string{"task": {"read", "write"}, "idea": {"admin"}}, set(TaskWrite, TaskRead, IdeaAdmin).ByResource())
	got, err := Sorted([]string{"task:write", "TASK:WRITE", "idea:read"})
	require.NoError(t, err)
	require.Equal(t, []string{"idea:read", "task:write"}, got)
	_, err = Sorted([]string{"x"})
	require.Error(t, err)
	_, err = ParsePreset("superuser")
	require.ErrorContains(t, err, "developer_agent, pm_agent, admin_agent")
}
