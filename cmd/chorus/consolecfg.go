package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/console"
)

// consoleConfig is how the web console is served (docs/production.md "The console").
type consoleConfig struct {
	// secure marks the console's cookies Secure: set it behind a TLS-terminating proxy.
	secure bool
	// sessionTTL is how long a sign-in lasts.
	sessionTTL time.Duration
	// publicURL is the origin people reach the console at (https://chorus.example.com); the
	// OpenID Connect redirect URL is derived from it.
	publicURL string
	// oidcIssuer and oidcClientID name the OpenID Connect provider and this client at it; the
	// secret comes from CHORUS_OIDC_CLIENT_SECRET or the file oidcSecretFile, never a flag value.
	oidcIssuer, oidcClientID, oidcSecretFile string
	// trustedProxies are the reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For
	// names the client sign-in attempts count against.
	trustedProxies []string
}

func (c *consoleConfig) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.secure, "console-secure-cookies", envBool("CHORUS_CONSOLE_SECURE_COOKIES"),
		"mark the console's cookies Secure; set it when a proxy terminates TLS in front of Chorus (requests that "+
			"arrive over TLS get Secure cookies anyway; env CHORUS_CONSOLE_SECURE_COOKIES=true)")
	cmd.Flags().DurationVar(&c.sessionTTL, "console-session-ttl", envDuration("CHORUS_CONSOLE_SESSION_TTL", 12*time.Hour),
		"how long a console sign-in lasts (env CHORUS_CONSOLE_SESSION_TTL)")
	cmd.Flags().StringVar(&c.publicURL, "console-url", envOr("CHORUS_CONSOLE_URL", ""),
		"the origin people reach the console at, e.g. https://chorus.example.com; the OpenID Connect redirect URL is "+
			"this + /console/login/oidc/callback, and an https origin makes the console's cookies Secure (env CHORUS_CONSOLE_URL)")
	cmd.Flags().StringSliceVar(&c.trustedProxies, "console-trusted-proxies", envList("CHORUS_CONSOLE_TRUSTED_PROXIES"),
		"addresses or CIDR ranges of the reverse proxies in front of Chorus, whose X-Forwarded-For names the client "+
			"that console sign-in attempts count against (comma-separated; env CHORUS_CONSOLE_TRUSTED_PROXIES)")
	cmd.Flags().StringVar(&c.oidcIssuer, "oidc-issuer", envOr("CHORUS_OIDC_ISSUER", ""),
		"the OpenID Connect provider's issuer URL; set it to offer sign-in through your identity provider (env CHORUS_OIDC_ISSUER)")
	cmd.Flags().StringVar(&c.oidcClientID, "oidc-client-id", envOr("CHORUS_OIDC_CLIENT_ID", ""),
		"Chorus's client id at the OpenID Connect provider (env CHORUS_OIDC_CLIENT_ID)")
	cmd.Flags().StringVar(&c.oidcSecretFile, "oidc-client-secret-file", envOr("CHORUS_OIDC_CLIENT_SECRET_FILE", ""),
		"file holding the client secret at the OpenID Connect provider; or set CHORUS_OIDC_CLIENT_SECRET "+
			"(env CHORUS_OIDC_CLIENT_SECRET_FILE)")
}

// oidc is the console's OpenID Connect configuration, nil when no issuer is set. Errors name the
// flag or variable to fix.
func (c consoleConfig) oidc() (*console.OIDCConfig, error) {
	if c.oidcIssuer == "" {
		if c.oidcClientID != "" || c.oidcSecretFile != "" {
			return nil, errors.New("--oidc-client-id and --oidc-client-secret-file need --oidc-issuer (CHORUS_OIDC_ISSUER)")
		}
		return nil, nil
	}
	secret := os.Getenv("CHORUS_OIDC_CLIENT_SECRET")
	if c.oidcSecretFile != "" {
		if secret != "" {
			return nil, errors.New("set CHORUS_OIDC_CLIENT_SECRET or --oidc-client-secret-file (CHORUS_OIDC_CLIENT_SECRET_FILE), not both")
		}
		b, err := os.ReadFile(c.oidcSecretFile)
		if err != nil {
			return nil, fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	if c.publicURL == "" {
		return nil, errors.New("--oidc-issuer needs --console-url (CHORUS_CONSOLE_URL), the origin people reach the " +
			"console at: the provider sends them back to it")
	}
	u, err := url.Parse(c.publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return nil, fmt.Errorf("--console-url %q must be an http(s) origin such as https://chorus.example.com", c.publicURL)
	}
	o := &console.OIDCConfig{Issuer: c.oidcIssuer, ClientID: c.oidcClientID, ClientSecret: secret,
		RedirectURL: u.Scheme + "://" + u.Host + console.OIDCCallbackPath}
	return o, o.Validate()
}

// proxies parses --console-trusted-proxies: each an IP address or a CIDR range.
func (c consoleConfig) proxies() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range c.trustedProxies {
		if ip := net.ParseIP(p); ip != nil {
			bits := 8 * len(ip.To16())
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("--console-trusted-proxies: %q is neither an IP address nor a CIDR range (10.0.0.5, 10.0.0.0/24)", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// mountConsole serves the console under /console on e, over the same use cases as the MCP endpoint.
func mountConsole(e *echo.Echo, a *app.App, log *slog.Logger, c consoleConfig) (*console.Console, error) {
	o, err := c.oidc()
	if err != nil {
		return nil, err
	}
	proxies, err := c.proxies()
	if err != nil {
		return nil, err
	}
	// A public https origin means TLS in front of Chorus: Secure cookies.
	secure := c.secure || strings.HasPrefix(c.publicURL, "https://")
	con, err := console.New(console.Config{App: a, Log: log, Secure: secure, SessionTTL: c.sessionTTL, OIDC: o,
		TrustedProxies: proxies})
	if err != nil {
		return nil, err
	}
	con.Mount(e)
	return con, nil
}
