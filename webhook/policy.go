package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// AllowEnv names the environment variable that holds the operator's allowances (the
// --webhook-allow flag's default).
const AllowEnv = "CHORUS_WEBHOOK_ALLOW"

// Policy is where webhooks may be sent (docs/security.md "Webhooks"): http and https URLs
// without userinfo, to hosts whose every address is public. Loopback, private (RFC 1918,
// fc00::/7), link-local (169.254.0.0/16, where cloud metadata services answer, and fe80::/10),
// unspecified, multicast, broadcast and carrier-grade NAT (100.64.0.0/10) addresses are refused,
// unless the operator allows them: by range (a CIDR or one address) or by host name. The zero
// Policy allows nothing beyond public addresses.
type Policy struct {
	nets  []netip.Prefix
	hosts []string // lower case, no trailing dot
	// Resolve looks a host name up at add time; nil uses the system resolver. Tests stub it. The
	// dial-time check never uses it: it sees the address the dialer actually connects to.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// ParseAllow reads an allow list, the value of --webhook-allow or CHORUS_WEBHOOK_ALLOW: CIDRs
// (127.0.0.0/8, fd00::/8), single addresses (10.0.0.7) or host names (hooks.internal),
// separated by commas; spaces and empty items are ignored. An item that is none of these is an
// error naming it.
func ParseAllow(list string) (Policy, error) {
	var p Policy
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if pr, err := netip.ParsePrefix(item); err == nil {
			p.nets = append(p.nets, pr.Masked())
			continue
		}
		if a, err := netip.ParseAddr(item); err == nil {
			p.nets = append(p.nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		if !hostName(item) {
			return Policy{}, fmt.Errorf("--webhook-allow (%s): %q is neither a CIDR (e.g. 127.0.0.0/8), an address "+
				"(e.g. 10.0.0.7) nor a host name (e.g. hooks.internal)", AllowEnv, item)
		}
		p.hosts = append(p.hosts, normHost(item))
	}
	return p, nil
}

// String is the allow list as ParseAllow reads it ("" for none).
func (p Policy) String() string {
	var out []string
	for _, n := range p.nets {
		out = append(out, n.String())
	}
	return strings.Join(append(out, p.hosts...), ",")
}

func hostName(s string) bool {
	if len(s) > 253 || s == "" {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// hostAllowed: the operator allowed this host by name.
func (p Policy) hostAllowed(host string) bool {
	h := normHost(host)
	for _, a := range p.hosts {
		if a == h {
			return true
		}
	}
	return false
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// IPv6 ranges whose addresses carry an IPv4 address that a gateway or the host may deliver to:
// IPv4-compatible (::a.b.c.d, deprecated), NAT64's well-known prefix (RFC 6052), 6to4 (RFC 3056).
// Their addresses are judged as the IPv4 address they carry. NAT64's local-use prefix (RFC 8215)
// may put the IPv4 address anywhere in it, and site-local (fec0::/10, deprecated) is private by
// its definition: both are refused whole.
var (
	v4Compatible = netip.MustParsePrefix("::/96")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	siteLocal    = netip.MustParsePrefix("fec0::/10")
)

// embedded4 is the IPv4 address an IPv6 address of v4Compatible, nat64 or sixToFour carries.
func embedded4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6() || a.IsLoopback() || a.IsUnspecified():
		return netip.Addr{}, false
	case v4Compatible.Contains(a), nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// kind says which refused range a holds ("" for a public address).
func kind(a netip.Addr) string {
	a = a.Unmap()
	if v4, ok := embedded4(a); ok {
		a = v4
	}
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "an unspecified address"
	case a.IsPrivate() || siteLocal.Contains(a) || nat64Local.Contains(a):
		return "a private address (RFC 1918, fc00::/7, fec0::/10 or NAT64's local-use 64:ff9b:1::/48)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (169.254.0.0/16 or fe80::/10, where cloud metadata services answer)"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	case cgnat.Contains(a):
		return "a carrier-grade NAT address (100.64.0.0/10)"
	}
	return ""
}

// refusal says why an address is refused, "" when it may be dialled: public, or in a range the
// operator allowed.
func (p Policy) refusal(a netip.Addr) string {
	a = a.Unmap()
	k := kind(a)
	if k == "" {
		return ""
	}
	v4, carries := embedded4(a)
	for _, n := range p.nets {
		if n.Contains(a) || carries && n.Contains(v4) {
			return ""
		}
	}
	return k
}

// fix is the end of every refusal of a range: how an operator allows it.
const fix = "Chorus does not send webhooks to internal addresses unless the operator allows them " +
	"(--webhook-allow on chorus serve or chorus dev, and on chorus webhook add, or " + AllowEnv +
	" for both, e.g. 127.0.0.0/8 for a receiver on this machine); " +
	"give a URL whose host is publicly reachable"

// URLError is a refused webhook URL: Reason says why and what to do, without naming the field
// (the caller prefixes it).
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// CheckURL checks a webhook URL when it is added: http or https, absolute, with a host and no
// userinfo, and its host (an address, or a name resolved now) only at addresses the policy
// allows, every one of them. It returns the URL as it will be used, or a *URLError. The dial of
// each delivery checks again (Client), so a name that later resolves elsewhere is still caught.
func (p Policy) CheckURL(ctx context.Context, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", &URLError{fmt.Sprintf("%q is not an absolute http:// or https:// URL; give one such as "+
			"https://hooks.example.com/chorus", raw)}
	}
	if u.User != nil {
		return "", &URLError{"the URL carries a user name or password; take them out (a receiver checks the " +
			"Chorus-Signature header instead, and the URL is shown to every project admin)"}
	}
	if u.Fragment != "" {
		u.Fragment = ""
	}
	host := u.Hostname()
	if p.hostAllowed(host) {
		return u.String(), nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		resolve := p.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err = resolve(rctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return "", &URLError{fmt.Sprintf("the host %q does not resolve from the Chorus server; give a host name "+
				"that does, or an address", host)}
		}
	}
	for _, a := range addrs {
		if why := p.refusal(a); why != "" {
			at := " is"
			if a.String() != host {
				at = " resolves to " + a.Unmap().String() + ","
			}
			if v4, ok := embedded4(a.Unmap()); ok {
				at = " carries the IPv4 address " + v4.String() + ","
			}
			return "", &URLError{fmt.Sprintf("the host %q%s %s. %s", host, at, why, fix)}
		}
	}
	return u.String(), nil
}

// DialError is a dial refused by the policy: the address the host resolved to at delivery time
// is not one webhooks may reach.
type DialError struct {
	Addr   string
	Reason string
}

func (e *DialError) Error() string {
	return fmt.Sprintf("refused to connect to %s: %s, which webhooks may not reach unless the operator allows it", e.Addr, e.Reason)
}

// control checks the address a dial is about to connect to, after name resolution: what
// connects is what is checked, so DNS rebinding cannot slip an internal address in.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DialError{Addr: address, Reason: "not an IP address"}
	}
	if why := p.refusal(ap.Addr()); why != "" {
		return &DialError{Addr: ap.Addr().Unmap().String(), Reason: why}
	}
	return nil
}

// ErrRedirect is the error of a delivery answered with a redirect: redirects are never followed
// (a receiver could point one inside), so a 3xx is a failed attempt.
var ErrRedirect = errors.New("the receiver answered with a redirect, which webhooks do not follow; give the final URL")

// Client is the HTTP client of deliveries under the policy: each request ends within timeout;
// every connection is checked at dial (net.Dialer.Control on the address actually dialled; a
// host the operator allowed by name is dialled as is); no proxy from the environment (it would
// dial for us, unchecked); redirects are not followed (the 3xx response is returned).
func (p Policy) Client(timeout time.Duration) *http.Client {
	checked := &net.Dialer{Timeout: timeout, Control: p.control}
	plain := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(addr); err == nil && p.hostAllowed(host) {
				return plain.DialContext(ctx, network, addr)
			}
			return checked.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{Timeout: timeout, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
