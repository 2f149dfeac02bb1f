package transform

import (
	"net/url"
	"testing"
)

var plainURLCases = []struct {
	in         string
	host, path string
	ok         bool
}{
	{"https://example.org", "example.org", "", true},
	{"https://example.org/", "example.org", "/", true},
	{"http://farm.example/3/ref/17", "farm.example", "/3/ref/17", true},
	{"https://Example.ORG/A-b_c.~d/$&+,:;=@x?q=1&r=2?s", "Example.ORG", "/A-b_c.~d/$&+,:;=@x", true},
	{"https://example.org?q", "example.org", "", true},
	{"https://example.org/?", "example.org", "/", true},
	{"https://example.org//double", "example.org", "//double", true},
	{"HTTPS://example.org/", "", "", false},
	{"Http://example.org/", "", "", false},
	{"ftp://example.org/", "", "", false},
	{"https://", "", "", false},
	{"https:///path", "", "", false},
	{"https://example.org:8080/", "", "", false},
	{"https://user@example.org/", "", "", false},
	{"https://example.org/#frag", "", "", false},
	{"https://example.org#frag", "", "", false},
	{"https://example.org/%41", "", "", false},
	{"https://example.org/a b", "", "", false},
	{"https://example.org/ü", "", "", false},
	{"https://example.org/(x)", "", "", false},
	{"https://example.org/a'b", "", "", false},
	{"https://example.org/a!b", "", "", false},
	{"https://example.org/a*b", "", "", false},
	{"https://example.org/\x01", "", "", false},
	{"https://[::1]/", "", "", false},
	{"https://ex_ample.org/", "", "", false},
	{" https://example.org/", "", "", false},
	{"//example.org/", "", "", false},
	{"/relative", "", "", false},
}

func TestPlainURL(t *testing.T) {
	for _, c := range plainURLCases {
		host, path, ok := plainURL(c.in)
		if host != c.host || path != c.path || ok != c.ok {
			t.Errorf("plainURL(%q) = %q, %q, %v; want %q, %q, %v", c.in, host, path, ok, c.host, c.path, c.ok)
		}
		checkPlainURL(t, c.in)
	}
}

// FuzzPlainURL holds plainURL to net/url: whatever it accepts parses and
// writes back unchanged, with the host and path it returns.
func FuzzPlainURL(f *testing.F) {
	for _, c := range plainURLCases {
		f.Add(c.in)
	}
	f.Fuzz(checkPlainURL)
}

func checkPlainURL(t *testing.T, s string) {
	host, path, ok := plainURL(s)
	if !ok {
		return
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("plainURL accepts %q, which url.Parse refuses: %v", s, err)
	}
	if got := u.String(); got != s {
		t.Errorf("plainURL accepts %q, which net/url writes as %q", s, got)
	}
	if u.Scheme != "http" && u.Scheme != "https" || !u.IsAbs() || u.User != nil || u.Opaque != "" ||
		u.Fragment != "" || u.RawFragment != "" {
		t.Errorf("plainURL accepts %q: parsed as %#v", s, u)
	}
	if u.Host != host || u.Hostname() != host || u.Port() != "" || u.Path != path || u.RawPath != "" {
		t.Errorf("plainURL(%q) = host %q, path %q; net/url: host %q (%q), path %q (raw %q)",
			s, host, path, u.Host, u.Hostname(), u.Path, u.RawPath)
	}
}

var canonicalCases = []string{
	"https://farm.example/3/items/7?utm_source=rss",
	"https://farm.example/3/items/7?utm_source=rss&id=4",
	"https://farm.example/3/items/7?id=4&utm_medium=x&&b",
	"https://farm.example/3/items/7?",
	"https://Farm.Example",
	"https://farm.example?q",
	"  http://farm.example/a  ",
	"http://farm.example/?utm_source",
	"http://farm.example/?%75tm_source=1&k=%zz",
	"https://farm.example:443/x#frag",
}

// TestCanonicalPlain holds the plain URLs' short cut to canonicalURL.
func TestCanonicalPlain(t *testing.T) {
	for _, s := range canonicalCases {
		checkCanonicalPlain(t, s)
	}
}

func FuzzCanonicalPlain(f *testing.F) {
	for _, s := range canonicalCases {
		f.Add(s)
	}
	f.Fuzz(checkCanonicalPlain)
}

func checkCanonicalPlain(t *testing.T, s string) {
	got, ok := canonicalPlain(s)
	if !ok {
		return
	}
	u := canonicalURL(s, nil)
	if u == nil {
		t.Fatalf("canonicalPlain(%q) = %q, canonicalURL refuses it", s, got)
	}
	if want := u.String(); got != want {
		t.Errorf("canonicalPlain(%q) = %q, canonicalURL %q", s, got, want)
	}
	u.Fragment, u.RawFragment = "", ""
	if want := u.String(); got != want {
		t.Errorf("canonicalPlain(%q) = %q, canonicalURL without its fragment %q", s, got, want)
	}
}
