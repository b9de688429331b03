package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The console's OpenID Connect settings: the secret from the environment or a file (never a
// flag value), the redirect URL from --console-url, and errors naming the flag to fix.
func TestConsoleOIDCConfig(t *testing.T) {
	t.Setenv("CHORUS_OIDC_CLIENT_SECRET", "")
	none, err := consoleConfig{}.oidc()
	require.NoError(t, err)
	require.Nil(t, none, "no issuer: no OpenID Connect")

	_, err = consoleConfig{oidcClientID: "chorus"}.oidc()
	require.ErrorContains(t, err, "need --oidc-issuer")

	base := consoleConfig{oidcIssuer: "https://login.example.com/realm", oidcClientID: "chorus"}
	_, err = base.oidc()
	require.ErrorContains(t, err, "--oidc-issuer needs --console-url")
	base.publicURL = "https://chorus.example.com"
	_, err = base.oidc()
	require.ErrorContains(t, err, "oidc client secret: required (set CHORUS_OIDC_CLIENT_SECRET or --oidc-client-secret-file)")

	t.Setenv("CHORUS_OIDC_CLIENT_SECRET", "s3cret")
	base.publicURL = "https://chorus.example.com/console"
	_, err = base.oidc()
	require.ErrorContains(t, err, "--console-url \"https://chorus.example.com/console\" must be an http(s) origin")
	base.publicURL = "https://chorus.example.com/"
	o, err := base.oidc()
	require.NoError(t, err)
	require.Equal(t, "https://chorus.example.com/console/login/oidc/callback", o.RedirectURL)
	require.Equal(t, "s3cret", o.ClientSecret)

	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))
	base.oidcSecretFile = file
	_, err = base.oidc()
	require.ErrorContains(t, err, "not both")
	t.Setenv("CHORUS_OIDC_CLIENT_SECRET", "")
	o, err = base.oidc()
	require.NoError(t, err)
	require.Equal(t, "from-file", o.ClientSecret)
	base.oidcSecretFile = filepath.Join(t.TempDir(), "missing")
	_, err = base.oidc()
	require.ErrorContains(t, err, "--oidc-client-secret-file:")
}

// --console-trusted-proxies takes addresses and CIDR ranges, and names a bad entry.
func TestConsoleTrustedProxies(t *testing.T) {
	ns, err := consoleConfig{trustedProxies: []string{"10.0.0.5", "192.168.0.0/16", "::1"}}.proxies()
	require.NoError(t, err)
	require.Equal(t, "10.0.0.5/32", ns[0].String())
	require.Equal(t, "192.168.0.0/16", ns[1].String())
	require.Equal(t, "::1/128", ns[2].String())
	_, err = consoleConfig{trustedProxies: []string{"proxy.local"}}.proxies()
	require.ErrorContains(t, err, `--console-trusted-proxies: "proxy.local" is neither`)
}
