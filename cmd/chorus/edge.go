package main

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/mcp"
)

// edgeConfig is what `chorus serve` and `chorus dev` admit over HTTP (docs/security.md): the
// Host names and Origins the server answers, the limits per API key and per company, and
// where /metrics is served.
type edgeConfig struct {
	allowedHosts   []string
	allowedOrigins []string
	limits         mcp.Limits
	// metricsAddr, when set, serves /metrics on a listener of its own, not on --addr.
	metricsAddr string
	// metricsToken (CHORUS_METRICS_TOKEN, environment only) is the bearer token /metrics asks for.
	metricsToken string
}

func (c *edgeConfig) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	d := mcp.DefaultLimits()
	f.StringSliceVar(&c.allowedHosts, "allowed-hosts", envList("CHORUS_ALLOWED_HOSTS"),
		"host names requests may name in Host (any port), e.g. chorus.example.com; * for any. Default: localhost, 127.0.0.1 "+
			"and ::1 when --addr is a loopback address, any otherwise (env CHORUS_ALLOWED_HOSTS, comma-separated)")
	f.StringSliceVar(&c.allowedOrigins, "allowed-origins", envList("CHORUS_ALLOWED_ORIGINS"),
		"browser origins that may call the MCP endpoint, e.g. https://inspector.example.com; * for any. Default: http(s) "+
			"origins on localhost, 127.0.0.1 or ::1, any port; requests without an Origin are not concerned (env CHORUS_ALLOWED_ORIGINS)")
	f.Float64Var(&c.limits.KeyRate, "limit-key-rate", envFloat("CHORUS_LIMIT_KEY_RATE", d.KeyRate),
		"requests per second one API key may send on average; 0: no limit (env CHORUS_LIMIT_KEY_RATE)")
	f.IntVar(&c.limits.KeyBurst, "limit-key-burst", envIntZero("CHORUS_LIMIT_KEY_BURST", d.KeyBurst),
		"requests one API key may send at once after a quiet spell (env CHORUS_LIMIT_KEY_BURST)")
	f.IntVar(&c.limits.KeyInFlight, "limit-key-inflight", envIntZero("CHORUS_LIMIT_KEY_INFLIGHT", d.KeyInFlight),
		"requests of one API key served at once; 0: no limit (env CHORUS_LIMIT_KEY_INFLIGHT)")
	f.IntVar(&c.limits.KeyWrites, "limit-key-writes", envIntZero("CHORUS_LIMIT_KEY_WRITES", d.KeyWrites),
		"mutating tool calls of one API key run at once; its further ones wait their turn; 0: no limit (env CHORUS_LIMIT_KEY_WRITES)")
	f.Float64Var(&c.limits.CompanyRate, "limit-company-rate", envFloat("CHORUS_LIMIT_COMPANY_RATE", d.CompanyRate),
		"requests per second the keys of one company may send together on average; 0: no limit (env CHORUS_LIMIT_COMPANY_RATE)")
	f.IntVar(&c.limits.CompanyBurst, "limit-company-burst", envIntZero("CHORUS_LIMIT_COMPANY_BURST", d.CompanyBurst),
		"requests the keys of one company may send at once after a quiet spell (env CHORUS_LIMIT_COMPANY_BURST)")
	f.IntVar(&c.limits.CompanyInFlight, "limit-company-inflight", envIntZero("CHORUS_LIMIT_COMPANY_INFLIGHT", d.CompanyInFlight),
		"requests of one company's keys served at once; 0: no limit (env CHORUS_LIMIT_COMPANY_INFLIGHT)")
	f.StringVar(&c.metricsAddr, "metrics-addr", envOr("CHORUS_METRICS_ADDR", ""),
		"serve GET /metrics on this address of its own (e.g. 127.0.0.1:9637) instead of --addr; with CHORUS_METRICS_TOKEN "+
			"set it asks for that bearer token (env CHORUS_METRICS_ADDR)")
	c.metricsToken = strings.TrimSpace(os.Getenv("CHORUS_METRICS_TOKEN"))
}

// edgeOptions are the endpoint's Host and Origin allow-lists for a server listening on addr.
func (c *edgeConfig) edgeOptions(addr string) mcp.EdgeOptions {
	o := mcp.EdgeOptions{AllowedHosts: c.allowedHosts, AllowedOrigins: c.allowedOrigins}
	if len(o.AllowedHosts) == 0 && !mcp.IsLoopbackAddr(addr) {
		// Reachable under names Chorus cannot know (the machine's, a proxy's): any, unless listed.
		o.AllowedHosts = []string{"*"}
	}
	return o
}

// metricsOnMain reports whether /metrics is served on the main address: not when it has a
// listener of its own, and on an address other machines reach only behind the token.
func (c *edgeConfig) metricsOnMain(addr string) bool {
	return c.metricsAddr == "" && (mcp.IsLoopbackAddr(addr) || c.metricsToken != "")
}

// guardMetrics asks for CHORUS_METRICS_TOKEN as a bearer token, when it is set.
func (c *edgeConfig) guardMetrics(h http.Handler) http.Handler {
	if c.metricsToken == "" {
		return h
	}
	want := []byte("Bearer " + c.metricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="chorus-metrics"`)
			http.Error(w, "metrics need the bearer token of CHORUS_METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func envList(name string) []string {
	var out []string
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(strings.TrimSpace(os.Getenv(name)), 64); err == nil && v >= 0 {
		return v
	}
	return def
}

// envIntZero is envInt that also takes 0 (a limit turned off).
func envIntZero(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil && v >= 0 {
		return v
	}
	return def
}

// checkLimits refuses negative limits and a rate limit with no burst.
func (c *edgeConfig) checkLimits() error {
	l := c.limits
	if l.KeyRate < 0 || l.KeyBurst < 0 || l.KeyInFlight < 0 || l.KeyWrites < 0 || l.CompanyRate < 0 || l.CompanyBurst < 0 ||
		l.CompanyInFlight < 0 {
		return fmt.Errorf("limits cannot be negative; 0 turns one off")
	}
	if (l.KeyRate > 0 && l.KeyBurst == 0) || (l.CompanyRate > 0 && l.CompanyBurst == 0) {
		return fmt.Errorf("a rate limit needs a burst of at least 1 (--limit-key-burst, --limit-company-burst)")
	}
	return nil
}
