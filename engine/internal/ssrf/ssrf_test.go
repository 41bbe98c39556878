package ssrf

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPolicyPermits covers the address forms that reach a blocked
// IPv4 or IPv6 address: zones, IPv4 embedded in IPv6, special ranges.
func TestPolicyPermits(t *testing.T) {
	t.Parallel()
	allowLoopback := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	for _, c := range []struct {
		name   string
		addr   string
		policy Policy
		want   bool
	}{
		{name: "PublicIPv4", addr: "93.184.216.34", want: true},
		{name: "PublicIPv6", addr: "2606:2800:220:1:248:1893:25c8:1946", want: true},
		{name: "Loopback", addr: "127.0.0.1"},
		{name: "LoopbackIPv6", addr: "::1"},
		{name: "ZonedLoopbackName", addr: "::1%lo"},
		{name: "ZonedLoopbackIndex", addr: "::1%1"},
		{name: "ZonedLoopbackBogus", addr: "::1%bogus"},
		{name: "ZonedPublicIPv6", addr: "2606:2800:220:1:248:1893:25c8:1946%eth0"},
		{name: "ZonedLinkLocal", addr: "fe80::1%eth0"},
		{name: "ZonedEvenIfAllowListed", addr: "::1%lo", policy: allowLoopback},
		{name: "IPv4Mapped", addr: "::ffff:127.0.0.1"},
		{name: "IPv4MappedPublic", addr: "::ffff:93.184.216.34", want: true},
		{name: "IPv4Compatible", addr: "::127.0.0.1"},
		{name: "IPv4CompatiblePrivate", addr: "::10.0.0.1"},
		{name: "IPv4CompatiblePublic", addr: "::93.184.216.34", want: true},
		{name: "IPv4Translated", addr: "::ffff:0:127.0.0.1"},
		{name: "IPv4TranslatedMetadata", addr: "::ffff:0:169.254.169.254"},
		{name: "NAT64Loopback", addr: "64:ff9b::127.0.0.1"},
		{name: "NAT64Private", addr: "64:ff9b::192.168.1.1"},
		{name: "NAT64Public", addr: "64:ff9b::93.184.216.34", want: true},
		{name: "NAT64LocalUse", addr: "64:ff9b:1::1"},
		{name: "SixToFourPrivate", addr: "2002:c0a8:101::1"},
		{name: "SixToFourLoopback", addr: "2002:7f00:1::"},
		{name: "SixToFourPublic", addr: "2002:5db8:d822::1", want: true},
		{name: "Teredo", addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2"},
		{name: "Documentation", addr: "2001:db8::1"},
		{name: "SiteLocal", addr: "fec0::1"},
		{name: "Discard", addr: "100::1"},
		{name: "UniqueLocal", addr: "fd00::1"},
		{name: "AllowListExemptsLoopback", addr: "127.0.0.1", policy: allowLoopback, want: true},
		{name: "AllowListExemptsEmbedded", addr: "64:ff9b::127.0.0.1", policy: allowLoopback, want: true},
		{name: "AllowListExemptsIPv6", addr: "::1", policy: allowLoopback, want: true},
		{name: "AllowListOfPrefix", addr: "2001:db8::5", policy: Policy{Allow: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}}, want: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(c.addr)
			require.Equal(t, c.want, c.policy.Permits(addr), "Permits(%s)", addr)
			err := c.policy.DialControl("tcp6", netip.AddrPortFrom(addr, 80).String(), nil)
			if c.want {
				require.NoError(t, err, "dial %s", addr)
			} else {
				require.True(t, errors.Is(err, ErrAddressRefused), "dial %s: %v", addr, err)
			}
		})
	}
}
