// Package ssrf is the policy on the addresses the shard's outbound HTTP
// may reach (completion callbacks, HTTP activities): loopback, private,
// link-local, metadata and special-purpose addresses are refused unless
// allow-listed, checked on the URL at start time and again on the address
// actually dialled. It knows nothing of runs.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/harvestd/harvest/engine/shardapi"
)

// Timeout bounds an outbound HTTP call of the shard: a completion
// callback's delivery, an HTTP activity's dial and TLS handshake.
const Timeout = 10 * time.Second

// blockedPrefixes are the address ranges a callback may not reach unless an
// operator allow-lists them: loopback, private, link-local (cloud metadata
// lives at 169.254.169.254), carrier-grade NAT, unique-local IPv6, and the
// special-purpose ranges (documentation, benchmarking, multicast,
// reserved). IPv6 ranges that embed an IPv4 address (mapped, compatible,
// translated, NAT64, 6to4) are not listed: embeddedIPv4 extracts the IPv4
// address and these rules apply to it.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("224.0.0.0/3"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215)
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/32"),      // Teredo: tunnels to an IPv4 address
	netip.MustParsePrefix("2001:2::/48"),    // benchmarking
	netip.MustParsePrefix("2001:10::/28"),   // ORCHID
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fec0::/10"), // site-local (deprecated)
	netip.MustParsePrefix("ff00::/8"),
}

// Ranges of IPv6 addresses whose last 32 bits are an IPv4 address.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // ::a.b.c.d (deprecated)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // ::ffff:0:a.b.c.d (SIIT)
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16") // 2002:AABB:CCDD::/48 embeds A.B.C.D
)

// Policy decides which addresses completion callbacks and HTTP
// activities may reach.
type Policy struct {
	// Allow lists ranges exempt from the block list (--callback-allow-cidr).
	Allow []netip.Prefix
}

// Permits reports whether a callback may connect to addr. An address with
// a zone (fe80::1%eth0, ::1%lo) is refused outright: prefixes never
// contain zoned addresses. An IPv4 address embedded in an IPv6 one is
// checked as the IPv4 address it reaches.
func (p Policy) Permits(addr netip.Addr) bool {
	if addr.Zone() != "" {
		return false
	}
	addr = addr.Unmap()
	if p.allowed(addr) {
		return true
	}
	if blocked(addr) {
		return false
	}
	v4, ok := embeddedIPv4(addr)
	return !ok || p.allowed(v4) || !blocked(v4)
}

func (p Policy) allowed(addr netip.Addr) bool {
	for _, a := range p.Allow {
		if a.Contains(addr) {
			return true
		}
	}
	return false
}

func blocked(addr netip.Addr) bool {
	for _, b := range blockedPrefixes {
		if b.Contains(addr) {
			return true
		}
	}
	return false
}

// embeddedIPv4 extracts the IPv4 address an unzoned, unmapped IPv6
// address carries: IPv4-compatible, IPv4-translated, NAT64 or 6to4.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	switch {
	case ipv4Compatible.Contains(addr), ipv4Translated.Contains(addr), nat64WellKnown.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// CheckURL validates a callback URL at start time: http or https, and every
// address its host resolves to is permitted.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return &shardapi.CallbackError{URL: raw, Reason: "not an absolute URL"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &shardapi.CallbackError{URL: raw, Reason: "only http and https are allowed"}
	}
	if u.User != nil {
		return &shardapi.CallbackError{URL: raw, Reason: "credentials in the URL are not allowed (use headers)"}
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return &shardapi.CallbackError{URL: raw, Reason: fmt.Sprintf("host %q does not resolve", host)}
		}
	}
	for _, a := range addrs {
		if !p.Permits(a) {
			return &shardapi.CallbackError{URL: raw, Reason: fmt.Sprintf("host %q resolves to %s, a loopback, private, link-local, metadata or special-purpose address", host, a.Unmap())}
		}
	}
	return nil
}

// ErrAddressRefused: a dialled address the policy refuses.
var ErrAddressRefused = errors.New("callback address refused by policy")

// DialControl re-checks the address actually dialled, so a host that
// resolved to a public address at start time cannot rebind to a private
// one at delivery time.
func (p Policy) DialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrAddressRefused, address)
	}
	if !p.Permits(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrAddressRefused, ap.Addr())
	}
	return nil
}
