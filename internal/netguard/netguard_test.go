package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

func TestIsPublic(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700:4700::1111": true, "93.184.216.34": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "fd12::1": false, "100.64.0.1": false,
		"0.0.0.0": false, "::": false, "224.0.0.1": false, "255.255.255.255": false, "::ffff:127.0.0.1": false,
		"::ffff:10.0.0.1": false, "64:ff9b::a00:1": false, "198.18.0.1": false, "240.0.0.1": false,
	} {
		if got := IsPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestGuardAllowNetworks(t *testing.T) {
	t.Parallel()
	nets, err := ParsePrefixes([]string{"10.20.0.0/16", "fd00::/8", "192.168.1.7"})
	if err != nil {
		t.Fatal(err)
	}
	g := New(nets)
	for addr, want := range map[string]bool{
		"10.20.3.4": true, "::ffff:10.20.3.4": true, "10.21.0.1": false, "fd12::1": true, "fc00::1": false,
		"192.168.1.7": true, "192.168.1.8": false, "127.0.0.1": false, "8.8.8.8": true,
	} {
		if got := g.Allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", addr, got, want)
		}
	}
	if err := g.Control("tcp", "127.0.0.1:80", nil); !errors.Is(err, ErrNotPublic) {
		t.Errorf("Control(127.0.0.1:80) = %v, want ErrNotPublic", err)
	}
	if err := g.Control("tcp", "10.20.0.1:443", nil); err != nil {
		t.Errorf("Control(10.20.0.1:443) = %v, want nil", err)
	}
	if err := (Guard{}).Control("tcp", "10.20.0.1:443", nil); !errors.Is(err, ErrNotPublic) {
		t.Errorf("zero Guard allowed a private address: %v", err)
	}
	for _, bad := range []string{"10.0.0.0/33", "not-a-net", ""} {
		if _, err := ParsePrefixes([]string{bad}); err == nil {
			t.Errorf("ParsePrefixes(%q) accepted it", bad)
		}
	}
}
