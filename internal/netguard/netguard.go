// Package netguard keeps fetches of pages that feeds point at (og:image
// lookups, full-text articles) away from the worker's own networks. Feeds
// are written by strangers; a link to http://10.0.0.1/admin or to a cloud
// metadata address must not be followed. The check runs when dialing,
// after DNS and for every redirect, so a name cannot be re-pointed at a
// private address between check and use.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrNotPublic is returned (wrapped) when a page or a redirect leads to an
// address that is not public and not in an allowed network.
var ErrNotPublic = errors.New("address is not public")

// Guard decides which addresses may be dialed: public ones, and those in
// the networks the operator allowed (http.allow_networks, for sites on an
// internal network). The zero Guard allows public addresses only.
type Guard struct {
	allow []netip.Prefix
}

// New returns a Guard that also allows the addresses in allow.
func New(allow []netip.Prefix) Guard {
	out := make([]netip.Prefix, len(allow))
	for i, p := range allow {
		out[i] = p.Masked()
	}
	return Guard{allow: out}
}

// ParsePrefixes parses CIDR strings ("10.1.0.0/16", "fd00::/8"); a bare
// address is a network of one.
func ParsePrefixes(cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("network %q: want a CIDR such as 10.0.0.0/8: %w", s, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

// Allowed reports whether a may be dialed.
func (g Guard) Allowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return IsPublic(a)
}

// Control is a net.Dialer Control function enforcing the guard on the
// resolved address of every connection.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !g.Allowed(ap.Addr()) {
		return fmt.Errorf("dial %s: %w", address, ErrNotPublic)
	}
	return nil
}

// specialPrefixes are ranges that are global unicast on paper but not a
// public web server's address.
var specialPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT, shared
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved
		"64:ff9b::/96",    // NAT64: embeds an IPv4 address, maybe a private one
		"64:ff9b:1::/48",  // local-use NAT64
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4: embeds an IPv4 address
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// IsPublic reports whether a is a global unicast address outside the
// private, shared and special-purpose ranges.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() ||
		a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
