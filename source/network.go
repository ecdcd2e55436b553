package source

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy is where the cluster admin lets pulls go beyond the public
// addresses of the host a Bundle names. Its zero value is the
// controller's default: no loopback, private, link-local or otherwise
// special address, and no redirect to another host (but a registry's
// blob redirect, see AllowRedirects).
type Policy struct {
	// AllowedNetworks are the ranges of otherwise refused addresses
	// (see RefusedAddress) that pulls may reach: a registry on the
	// cluster's network, say 10.0.0.0/8. 0.0.0.0/0 and ::/0 allow every
	// address (AnyAddress). The controller's --allow-private-registries.
	AllowedNetworks []netip.Prefix
	// AllowRedirects lets a chart repository's index place a chart on
	// another host, and a registry or chart repository redirect to
	// another host; credentials are never sent there (see Credentials).
	// Without it, those are refused (URLRefused) except the redirect of
	// an OCI registry's blob request, which the distribution spec has
	// registries send to their storage (a CDN, a bucket) and whose
	// content is checked against its digest. The addresses of other hosts
	// are checked as the named host's are. The controller's
	// --allow-source-redirects.
	AllowRedirects bool
	// PlainHTTP lets a pull from an OCI registry use http, as Helm's
	// --plain-http: a local registry an author runs (`stencil render
	// --plain-http`). The controller never sets it.
	PlainHTTP bool
}

// AnyAddress is the policy of a pull on the user's own machine (the
// command line): every address may be reached, the user's own network
// included; redirects are as the controller's default.
func AnyAddress() Policy {
	return Policy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
}

// ParseNetworks parses a list of CIDR ranges (an address alone is a
// range of one), as --allow-private-registries takes them.
func ParseNetworks(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if a, err := netip.ParseAddr(c); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or a CIDR range", c)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// specialRanges are the ranges beyond netip's classes (loopback, private,
// link-local, multicast, unspecified) that no pull reaches unless the
// admin allows them: none is a public registry's.
var specialRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (RFC 6598, carrier-grade NAT; some clouds' metadata)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
}

// RefusedAddress says why a pull may not reach a, or "" when it may (a
// public address): loopback (127.0.0.0/8, ::1), private (RFC 1918,
// fc00::/7), link-local (169.254.0.0/16 with the clouds' metadata
// service 169.254.169.254, fe80::/10), unspecified, multicast, and the
// ranges of specialRanges; an IPv4 address inside IPv6 (::ffff:0:0/96,
// NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as that IPv4 address.
func RefusedAddress(a netip.Addr) string {
	a = a.Unmap()
	if v4, ok := embeddedIPv4(a); ok {
		if why := RefusedAddress(v4); why != "" {
			return why + ", inside an IPv6 address"
		}
	}
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local (the clouds' metadata service)"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}

// embeddedIPv4 is the IPv4 address a NAT64 (64:ff9b::/96, 64:ff9b:1::/48)
// or 6to4 (2002::/16) address carries.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case netip.MustParsePrefix("64:ff9b::/96").Contains(a), netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case netip.MustParsePrefix("2002::/16").Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// check refuses a, unless it is public or in an allowed network.
func (p Policy) check(a netip.Addr) error {
	why := RefusedAddress(a)
	if why == "" {
		return nil
	}
	for _, n := range p.AllowedNetworks {
		if n.Contains(a.Unmap()) || n.Contains(a) {
			return nil
		}
	}
	return fail(ReasonURLRefused, nil, "refusing to connect to %s, a %s address: the controller reaches such a registry only where the cluster admin allows it (--allow-private-registries)", a.Unmap(), why)
}

// control is the net.Dialer's Control: it runs for every connection,
// with the address the name resolved to, so a name that resolves to a
// refused address (or starts to, between two lookups) is refused too.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fail(ReasonURLRefused, nil, "refusing to connect to %s: not an address", address)
	}
	return p.check(ap.Addr())
}

// checkHost resolves host and refuses it if any of its addresses is
// refused: the check of a request that a proxy, not this process, will
// connect to.
func (p Policy) checkHost(ctx context.Context, host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.check(a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return remoteError(err, "resolve %s", host)
	}
	for _, a := range addrs {
		if err := p.check(a); err != nil {
			return err
		}
	}
	return nil
}

// transport is an https-only transport of p trusting ca (the system's
// roots without it): every connection is checked at dial time; a request
// through the environment's proxy has its host's addresses checked
// before it is handed to the proxy, and the proxy's own address is
// checked as any other (an admin allows a private proxy's).
func (p Policy) transport(t *http.Transport) http.RoundTripper {
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}).DialContext
	t.Proxy = func(r *http.Request) (*url.URL, error) {
		u, err := http.ProxyFromEnvironment(r)
		if u == nil || err != nil {
			return u, err
		}
		if err := p.checkHost(r.Context(), r.URL.Hostname()); err != nil {
			return nil, err
		}
		return u, nil
	}
	if p.PlainHTTP {
		return t
	}
	return httpsOnly{t}
}

// httpsOnly refuses every request that is not https: no registry or
// repository is reached in clear text, even one on a private address that
// go-containerregistry would otherwise try over http.
type httpsOnly struct{ next http.RoundTripper }

// errPlainHTTP is httpsOnly's refusal. It is no *Error: go-containerregistry
// tries http beside https for a registry on a private address, and the
// https attempt's failure is the one to report.
type errPlainHTTP struct{ host string }

func (e errPlainHTTP) Error() string {
	return "refusing http://" + e.host + ": only https is used"
}

func (h httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		return nil, errPlainHTTP{host: r.URL.Host}
	}
	return h.next.RoundTrip(r)
}

// redirects refuses, unless allow, a redirect from the registry at host
// to another host, but for a blob's (see Policy.AllowRedirects).
type redirects struct {
	next  http.RoundTripper
	host  string
	allow bool
}

func (t redirects) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Response == nil || t.allow || sameHost(r.URL.Host, t.host) {
		return t.next.RoundTrip(r)
	}
	first := r
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	if isBlob(first) {
		return t.next.RoundTrip(r)
	}
	return nil, fail(ReasonURLRefused, nil, "the registry %s redirected to %s://%s: a redirect to another host is followed only for a blob, unless the cluster admin allows it (--allow-source-redirects)", t.host, r.URL.Scheme, r.URL.Host)
}

// isBlob reports a GET or HEAD of an OCI blob: /v2/NAME/blobs/DIGEST.
func isBlob(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, "/blobs/")
	return i > 0 && !strings.Contains(rest[i+len("/blobs/"):], "/")
}

// sameHost compares two HOST[:PORT], the port 443 implied.
func sameHost(a, b string) bool {
	return canonicalHost(a) == canonicalHost(b)
}

// canonicalHost is HOST[:PORT] lower-cased, without a scheme, a path or
// the https port.
func canonicalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	return strings.TrimSuffix(h, ":443")
}
