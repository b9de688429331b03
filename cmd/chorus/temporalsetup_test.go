package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chorus temporal setup refuses bad settings by name before it connects to anything (the
// address here answers nothing, so a connection attempt would fail differently).
func TestTemporalSetupRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		env, args []string
		want      string
	}{
		{args: []string{"--retention", "1h"}, want: "--retention 1h0m0s is too short"},
		{env: []string{"TEMPORAL_NAMESPACE_RETENTION", "thirty days"}, want: `TEMPORAL_NAMESPACE_RETENTION "thirty days" is not a duration`},
		{args: []string{"--namespace", " "}, want: "--namespace is empty"},
		{args: []string{"--wait", "0s"}, want: "--wait must be positive"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(c.env[0], c.env[1])
			}
			cmd := newRootCmd()
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"temporal", "setup", "--temporal-address", "127.0.0.1:1"}, c.args...))
			err := cmd.ExecuteContext(context.Background())
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.Empty(t, out.String(), "nothing was done, so nothing is reported")
		})
	}
}
