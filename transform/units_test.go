package transform

import (
	"net/url"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"
	ext "github.com/mmcdole/gofeed/extensions"
)

func TestCanonicalLink(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://example.org/blog/")
	tests := map[string]string{
		"https://Example.ORG/a?utm_source=rss&utm_medium=feed&id=3#comments": "https://example.org/a?id=3",
		"http://example.org:80/a":         "http://example.org/a",
		"https://example.org:443":         "https://example.org/",
		"https://example.org:8443/a":      "https://example.org:8443/a",
		"https://user:pass@example.org/a": "https://example.org/a",
		"https://example.org/a?fbclid=1&gclid=2&mc_cid=3&mc_eid=4&x=%20y&UTM_Campaign=z": "https://example.org/a?x=%20y",
		"https://example.org/a?q=1&q=2&a=":                                               "https://example.org/a?q=1&q=2&a=",
		"https://example.org/a?":                                                         "https://example.org/a",
		"post-1.html":                                                                    "https://example.org/blog/post-1.html",
		"//cdn.example.org/x":                                                            "https://cdn.example.org/x",
		"  https://example.org/with space  ":                                             "https://example.org/with%20space",
		"http://[2001:DB8::1]:80/a":                                                      "http://[2001:db8::1]/a",
		"javascript:alert(1)":                                                            "",
		"mailto:a@example.org":                                                           "",
		"ftp://example.org/":                                                             "",
		"https:///nohost":                                                                "",
		"":                                                                               "",
	}
	for in, want := range tests {
		if got := canonicalLink(in, base); got != want {
			t.Errorf("canonicalLink(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"one two three four", 10, "one two…"},
		{"one two, three", 9, "one two…"},
		{"abcdefghijklmnop", 8, "abcdefg…"},
		{"word boundaryX", 14, "word boundaryX"},
		{"a verylongwordthatcannotbreak", 12, "a verylongw…"},
		{"ééééé ééééé", 8, "ééééé…"},
		{"x", 1, "x"},
		{"xy", 1, "…"},
	}
	for _, tc := range tests {
		got := truncate(tc.in, tc.max)
		if got != tc.want || utf8.RuneCountInString(got) > tc.max {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"  a\n\t b  ":                         "a b",
		"<p>a</p><p>b</p>":                    "a b",
		"a<br>b":                              "a b",
		"<b>bo</b>ld":                         "bold",
		"R&amp;D &lt;tag&gt; &#8220;q&#8221;": "R&D <tag> “q”",
		"x<script>alert(1)</script>y<style>p{}</style>z": "xyz",
		"a\u200bb\u00a0c\ufeff":                          "ab c",
		"5 < 6 and 7 > 3":                                "5 < 6 and 7 > 3",
		"<svg><title>t</title></svg>ok":                  "ok",
		"\xff\xfebad utf8":                               "bad utf8",
	}
	for in, want := range tests {
		if got := plainText(in); got != want {
			t.Errorf("plainText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	utc := func(y int, mo time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no tz database: %v", err)
	}
	tests := []struct {
		in     string
		loc    *time.Location
		want   time.Time
		allDay bool
		ok     bool
	}{
		{"2006-12-01T10:00:00Z", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"2006-12-01T10:00:00.123+02:00", nil, time.Date(2006, 12, 1, 8, 0, 0, 123e6, time.UTC), false, true},
		{"2006-12-01T10:00+0200", nil, utc(2006, 12, 1, 8, 0, 0), false, true},
		{"20061201T100000Z", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"20061201T100000", paris, utc(2006, 12, 1, 9, 0, 0), false, true},
		{"20061201", nil, utc(2006, 12, 1, 0, 0, 0), true, true},
		{"2006-12-01", paris, utc(2006, 12, 1, 0, 0, 0), true, true},
		{"Fri, 01 Dec 2006 10:00:00 GMT", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"Fri, 1 Dec 2006 10:00:00 -0500", nil, utc(2006, 12, 1, 15, 0, 0), false, true},
		{"Fri, 01 Dec 2006 10:00 EST", nil, utc(2006, 12, 1, 15, 0, 0), false, true},
		{"1 Dec 2006 10:00:00 PDT", nil, utc(2006, 12, 1, 17, 0, 0), false, true},
		{"Fri, 01 Dec 2006 10:00:00 XYZ", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"2006-12-01 10:00:00", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"December 1, 2006", nil, utc(2006, 12, 1, 0, 0, 0), true, true},
		{"  2006-12-01   10:00  ", nil, utc(2006, 12, 1, 10, 0, 0), false, true},
		{"0000-00-00", nil, time.Time{}, false, false},
		{"0001-01-01T00:00:00Z", nil, time.Time{}, false, false},
		{"tomorrow", nil, time.Time{}, false, false},
		{"", nil, time.Time{}, false, false},
	}
	for _, tc := range tests {
		got, allDay, ok := parseDate(tc.in, tc.loc)
		if !got.Equal(tc.want) || allDay != tc.allDay || ok != tc.ok || (ok && got.Location() != time.UTC) {
			t.Errorf("parseDate(%q) = %v, %v, %v; want %v, %v, %v", tc.in, got, allDay, ok, tc.want, tc.allDay, tc.ok)
		}
	}
}

func TestExtPath(t *testing.T) {
	t.Parallel()
	item := &gofeed.Item{
		Title:  "T",
		Custom: map[string]string{"venue": " Hall "},
		Extensions: ext.Extensions{
			"ev":   {"startdate": {{Value: "2024-01-01"}}},
			"xCal": {"dtstart": {{Value: "20240101T100000Z"}}},
			"g": {"location": {{Value: "", Attrs: map[string]string{"country": "FR"}, Children: map[string][]ext.Extension{
				"city": {{Value: " "}, {Value: "Paris"}},
			}}}},
		},
	}
	tests := map[string]string{
		"ev:startdate":          "2024-01-01",
		"EV:StartDate":          "2024-01-01",
		"xcal:dtstart":          "20240101T100000Z",
		"g:location@country":    "FR",
		"g:location/g:city":     "Paris", // child prefixes are optional; blank values are passed over
		"g:location/city":       "Paris",
		"g:missing":             "",
		"venue":                 "Hall",
		"title":                 "T",
		"nope:thing/child@attr": "",
	}
	for path, want := range tests {
		p, err := parseExtPath(path)
		if err != nil {
			t.Errorf("parseExtPath(%q): %v", path, err)
			continue
		}
		if got := p.value(item); got != want {
			t.Errorf("value(%q) = %q, want %q", path, got, want)
		}
	}
	for _, bad := range []string{"", ":x", "x:", "a b", "x:y@", "x:y/", "plain/child", "plain@attr", "x:y@a:b", "x:a:b"} {
		if _, err := parseExtPath(bad); err == nil {
			t.Errorf("parseExtPath(%q): want an error", bad)
		}
	}
}
