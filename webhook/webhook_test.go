package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Internal addresses are refused at add time, with the reason and the operator's fix; the
// operator's allowances open them; userinfo and other schemes are refused.
func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	var strict Policy
	for raw, why := range map[string]string{
		"http://10.0.0.1/hook":                    "a private address",
		"http://169.254.169.254/latest/meta-data": "a link-local address",
		"http://[::1]:8080/":                      "a loopback address",
		"http://127.0.0.1:9/":                     "a loopback address",
		"http://localhost:9/":                     "a loopback address",
		"http://0.0.0.0/":                         "an unspecified address",
		"http://100.64.1.1/":                      "carrier-grade NAT",
		"http://[fd00::1]/":                       "a private address",
		"http://[fe80::1]/":                       "a link-local address",
		"http://224.0.0.1/":                       "a multicast address",
		"http://[::ffff:10.1.2.3]/":               "a private address",
	} {
		_, err := strict.CheckURL(ctx, raw)
		var ue *URLError
		require.ErrorAs(t, err, &ue, raw)
		assert.Contains(t, ue.Reason, why, raw)
		assert.Contains(t, ue.Reason, "--webhook-allow", raw)
	}
	for _, raw := range []string{"ftp://example.com/", "example.com/hook", "https://", "file:///etc/passwd"} {
		_, err := strict.CheckURL(ctx, raw)
		require.ErrorContains(t, err, "is not an absolute http:// or https:// URL", raw)
	}
	_, err := strict.CheckURL(ctx, "https://user:pw@93.184.216.34/")
	require.ErrorContains(t, err, "user name or password")

	got, err := strict.CheckURL(ctx, " https://93.184.216.34/hook#x ")
	require.NoError(t, err)
	assert.Equal(t, "https://93.184.216.34/hook", got)

	// A name is judged by every address it resolves to.
	stub := strict
	stub.Resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.9.9.9")}, nil
	}
	_, err = stub.CheckURL(ctx, "https://hooks.example.com/")
	require.ErrorContains(t, err, `"hooks.example.com" resolves to 10.9.9.9, a private address`)

	p, err := ParseAllow(" 127.0.0.0/8, 10.0.0.1 ,hooks.internal,")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.0/8,10.0.0.1/32,hooks.internal", p.String())
	for _, raw := range []string{"http://127.0.0.1:9/", "http://10.0.0.1/", "http://HOOKS.internal./x"} {
		_, err := p.CheckURL(ctx, raw)
		require.NoError(t, err, raw)
	}
	_, err = p.CheckURL(ctx, "http://10.0.0.2/")
	require.ErrorContains(t, err, "a private address")
	_, err = ParseAllow("127.0.0.0/8,not a host")
	require.ErrorContains(t, err, `"not a host" is neither a CIDR`)
}

// The dial checks the address actually dialled: a name that passed at add time but resolves to
// loopback at delivery time (DNS rebinding) is refused before any byte is sent; an allowed
// range connects; a redirect is returned, not followed.
func TestClientChecksAtDial(t *testing.T) {
	hit := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit++
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]

	var strict Policy
	_, err := strict.Client(5*time.Second).Post("http://localhost"+port+"/", "application/json", nil)
	var de *DialError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, de.Reason, "a loopback address")
	assert.Equal(t, 0, hit, "nothing reached the receiver")

	allowed, err := ParseAllow("127.0.0.0/8")
	require.NoError(t, err)
	c := allowed.Client(5 * time.Second)
	res, err := c.Post(srv.URL+"/", "application/json", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	res, err = c.Post(srv.URL+"/moved", "application/json", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusFound, res.StatusCode, "the redirect is the answer; it is not followed")
	assert.Equal(t, 2, hit)
}

// A signature verifies for its body, timestamp and secret only, within the tolerance.
func TestSignVerify(t *testing.T) {
	s := NewSecret()
	require.True(t, strings.HasPrefix(s, SecretPrefix))
	assert.Len(t, s, len(SecretPrefix)+43)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"x"}`)
	sig := Sign(s, now.Unix(), body)
	require.True(t, strings.HasPrefix(sig, "v1="))
	assert.True(t, Verify(s, "1800000000", sig, body, now, 5*time.Minute))
	assert.True(t, Verify(s, "1800000000", "v1=00,"+sig, body, now, 5*time.Minute))
	assert.False(t, Verify(s, "1800000000", sig, []byte(`{"id":"y"}`), now, 5*time.Minute))
	assert.False(t, Verify(NewSecret(), "1800000000", sig, body, now, 5*time.Minute))
	assert.False(t, Verify(s, "1800000001", sig, body, now, 5*time.Minute))
	assert.False(t, Verify(s, "1800000000", sig, body, now.Add(time.Hour), 5*time.Minute))
}

// IPv6 addresses that carry an IPv4 address (IPv4-compatible, NAT64's 64:ff9b::/96, 6to4's
// 2002::/16) are judged as that IPv4 address, at add time and at dial time: a NAT64 gateway or a
// 6to4 relay would deliver them to it. NAT64's local-use prefix and site-local are refused whole.
// An operator's allowance of the IPv4 range opens them too.
func TestEmbeddedIPv4IsJudgedAsIPv4(t *testing.T) {
	ctx := context.Background()
	var strict Policy
	for host, why := range map[string]string{
		"::127.0.0.1":         "a loopback address",
		"64:ff9b::127.0.0.1":  "a loopback address",
		"64:ff9b::a9fe:a9fe":  "a link-local address",
		"64:ff9b::10.1.2.3":   "a private address",
		"2002:a9fe:a9fe::1":   "a link-local address",
		"2002:c0a8:0101::":    "a private address",
		"2002:7f00:1::":       "a loopback address",
		"64:ff9b:1::a00:1":    "a private address",
		"fec0::1":             "a private address",
		"::0.0.0.2":           "an unspecified address",
		"64:ff9b::100.64.0.1": "carrier-grade NAT",
	} {
		_, err := strict.CheckURL(ctx, "http://["+host+"]/hook")
		var ue *URLError
		require.ErrorAs(t, err, &ue, host)
		assert.Contains(t, ue.Reason, why, host)
		var de *DialError
		require.ErrorAs(t, strict.control("tcp", "["+host+"]:443", nil), &de, host)
		assert.Contains(t, de.Reason, why, host)
	}
	_, err := strict.CheckURL(ctx, "http://[64:ff9b::127.0.0.1]/")
	require.ErrorContains(t, err, "carries the IPv4 address 127.0.0.1, a loopback address")
	// Public IPv4 addresses behind these prefixes stay public, as do other IPv6 addresses.
	for _, raw := range []string{"http://[64:ff9b::93.184.216.34]/", "http://[2002:5db8:d822::1]/", "http://[2606:4700::1111]/"} {
		_, err := strict.CheckURL(ctx, raw)
		require.NoError(t, err, raw)
	}
	allowed, err := ParseAllow("127.0.0.0/8")
	require.NoError(t, err)
	_, err = allowed.CheckURL(ctx, "http://[64:ff9b::127.0.0.1]/")
	require.NoError(t, err)
	require.NoError(t, allowed.control("tcp", "[::127.0.0.1]:80", nil))
}
