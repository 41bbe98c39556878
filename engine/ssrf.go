package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// CallbackError refuses a completion callback URL (HTTP 422).
type CallbackError struct {
	URL    string
	Reason string
}

func (e *CallbackError) Error() string {
	return fmt.Sprintf("completion callback %q refused: %s", e.URL, e.Reason)
}

// blockedPrefixes are the address ranges a callback may not reach unless an
// operator allow-lists them: loopback, private, link-local (cloud metadata
// lives at 169.254.169.254), carrier-grade NAT, unique-local IPv6.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/3"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// CallbackPolicy decides which addresses completion callbacks may reach.
type CallbackPolicy struct {
	// Allow lists ranges exempt from the block list (--callback-allow-cidr).
	Allow []netip.Prefix
}

// Permits reports whether a callback may connect to addr.
func (p CallbackPolicy) Permits(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, a := range p.Allow {
		if a.Contains(addr) {
			return true
		}
	}
	for _, b := range blockedPrefixes {
		if b.Contains(addr) {
			return false
		}
	}
	return true
}

// CheckURL validates a callback URL at start time: http or https, and every
// address its host resolves to is permitted.
func (p CallbackPolicy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return &CallbackError{URL: raw, Reason: "not an absolute URL"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &CallbackError{URL: raw, Reason: "only http and https are allowed"}
	}
	if u.User != nil {
		return &CallbackError{URL: raw, Reason: "credentials in the URL are not allowed (use headers)"}
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return &CallbackError{URL: raw, Reason: fmt.Sprintf("host %q does not resolve", host)}
		}
	}
	for _, a := range addrs {
		if !p.Permits(a) {
			return &CallbackError{URL: raw, Reason: fmt.Sprintf("host %q resolves to %s, a loopback, private, link-local or metadata address", host, a.Unmap())}
		}
	}
	return nil
}

var errAddressRefused = errors.New("callback address refused by policy")

// dialControl re-checks the address actually dialled, so a host that
// resolved to a public address at start time cannot rebind to a private
// one at delivery time.
func (p CallbackPolicy) dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errAddressRefused, address)
	}
	if !p.Permits(ap.Addr()) {
		return fmt.Errorf("%w: %s", errAddressRefused, ap.Addr())
	}
	return nil
}
