package feeds

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"golang.org/x/net/html/charset"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func utf16Bytes(s string, bigEndian, bom bool) []byte {
	var out []byte
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xFEFF}, units...)
	}
	for _, u := range units {
		if bigEndian {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

func utf32Bytes(s string, bigEndian, bom bool) []byte {
	var out []byte
	runes := []rune(s)
	if bom {
		runes = append([]rune{0xFEFF}, runes...)
	}
	for _, r := range runes {
		if bigEndian {
			out = append(out, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
		} else {
			out = append(out, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
		}
	}
	return out
}

func encodeLegacy(t *testing.T, label, s string) []byte {
	t.Helper()
	enc, _ := charset.Lookup(label)
	if enc == nil {
		t.Fatalf("no encoding %q", label)
	}
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rssWithTitle(decl, title string) string {
	return decl + "<rss version=\"2.0\"><channel><title>" + title +
		"</title><item><title>one</title><guid>1</guid></item></channel></rss>"
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseEncodings(t *testing.T) {
	t.Parallel()
	const cyr = "Новый цитатник"
	const latin = "Café crème à l'œil"
	tests := []struct {
		name        string
		body        []byte
		contentType string
		wantTitle   string
	}{
		{"utf-8", []byte(rssWithTitle(`<?xml version="1.0" encoding="utf-8"?>`, latin)), "", latin},
		{"utf-8 bom", append([]byte("\xEF\xBB\xBF"), rssWithTitle(`<?xml version="1.0"?>`, latin)...), "", latin},
		{"utf-16le bom", utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-16"?>`, cyr), false, true), "", cyr},
		{"utf-16be bom", utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="UTF-16"?>`, cyr), true, true), "", cyr},
		{"utf-16le no bom", utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-16le"?>`, cyr), false, false), "", cyr},
		{"utf-16be no bom", utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-16be"?>`, cyr), true, false), "", cyr},
		{"utf-16 surrogate pair", utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-16"?>`, "emoji 😀"), false, true), "", "emoji 😀"},
		{"utf-32le bom", utf32Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-32"?>`, cyr), false, true), "", cyr},
		{"utf-32be no bom", utf32Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-32"?>`, cyr), true, false), "", cyr},
		{"declared iso-8859-1", encodeLegacy(t, "iso-8859-1", rssWithTitle(`<?xml version="1.0" encoding="ISO-8859-1"?>`, "Café crème")), "", "Café crème"},
		{"declared windows-1251 beats header", encodeLegacy(t, "windows-1251", rssWithTitle(`<?xml version='1.0' encoding='windows-1251'?>`, cyr)), "text/xml; charset=iso-8859-1", cyr},
		{"stale utf-16 declaration, header charset", encodeLegacy(t, "koi8-r", rssWithTitle(`<?xml version="1.0" encoding="utf-16"?>`, cyr)), "text/xml; charset=koi8-r", cyr},
		{"header charset koi8-r", encodeLegacy(t, "koi8-r", rssWithTitle("", cyr)), "application/rss+xml; charset=KOI8-R", cyr},
		{"undeclared latin-1 falls back to windows-1252", encodeLegacy(t, "windows-1252", rssWithTitle("", "Euro € café")), "", "Euro € café"},
		{"declared latin-1 but utf-8 body", []byte(rssWithTitle(`<?xml version="1.0" encoding="iso-8859-1"?>`, latin)), "", latin},
		{"utf-8 with a stray byte", []byte(rssWithTitle(`<?xml version="1.0" encoding="utf-8"?>`, "Köln, Zürich, München \xff")), "", "Köln, Zürich, München ÿ"},
		{"whitespace before declaration", []byte("\n\n   " + rssWithTitle(`<?xml version="1.0" encoding="UTF-8"?>`, "ws")), "", "ws"},
		{"comment before declaration", []byte("<!-- generated -->\n" + rssWithTitle(`<?xml version="1.0" encoding="UTF-8"?>`, "c")), "", "c"},
		{"long prolog comment", []byte(`<?xml version="1.0"?><!--` + strings.Repeat("x", 10000) + "-->" + rssWithTitle("", "long")), "", "long"},
		{"control characters", []byte(rssWithTitle(`<?xml version="1.0"?>`, "a\x01b\x0Bc\x1Fd")), "", "abcd"},
		{"control character references", []byte(rssWithTitle(`<?xml version="1.0"?>`, "a&#1;b&#x1F;c&#65;")), "", "abcA"},
		{"noncharacter", []byte(rssWithTitle(`<?xml version="1.0"?>`, "a\uFFFEb")), "", "ab"},
		{"gzip without content-encoding", gzipped(t, []byte(rssWithTitle(`<?xml version="1.0"?>`, "gz"))), "application/xml", "gz"},
		{"json feed with bom", []byte("\xEF\xBB\xBF{\"version\":\"https://jsonfeed.org/version/1.1\",\"title\":\"j\",\"items\":[]}"), "application/feed+json", "j"},
		{"json feed utf-16", utf16Bytes(`{"version":"https://jsonfeed.org/version/1","title":"`+cyr+`","items":[]}`, false, true), "", cyr},
		{"testdata koi8-r via header", readTestdata(t, "feedparser-py__koi8r.xml"), "text/xml; charset=koi8-r", ""},
		{"testdata windows-1251 declared", readTestdata(t, "miniflux__encoding_WINDOWS-1251.xml"), "text/xml", "iBash.Org.Ru"},
		{"testdata whitespace before declaration", readTestdata(t, "simplepie__feed-with-whitespace-before-xml-declaration.xml"), "", "Whitespace before XML declaration"},
		{"testdata gzip body", readTestdata(t, "node-feedparser__invalid-characters-gzipped.xml"), "text/xml", "NSHipster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, err := Parse(tt.body, tt.contentType)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if feed.Title != tt.wantTitle {
				t.Errorf("title = %q, want %q", feed.Title, tt.wantTitle)
			}
			if len(feed.Items) == 0 && !strings.HasPrefix(tt.name, "json") && !strings.HasPrefix(tt.name, "testdata whitespace") {
				t.Errorf("no items")
			}
		})
	}
}

// TestParseLegacyItemText checks the decoded text itself, not only that the
// document parsed: the koi8-r file declares nothing, so only the header
// charset can decode it.
func TestParseLegacyItemText(t *testing.T) {
	t.Parallel()
	feed, err := Parse(readTestdata(t, "feedparser-py__koi8r.xml"), "text/xml; charset=koi8-r")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := feed.Items[0].Title, "Как пережить новогоднюю ночь"; got != want {
		t.Errorf("koi8-r item title = %q, want %q", got, want)
	}
	feed, err = Parse(readTestdata(t, "miniflux__encoding_WINDOWS-1251.xml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := feed.Description, "Новый цитатник Рунета"; got != want {
		t.Errorf("windows-1251 description = %q, want %q", got, want)
	}
	feed, err = Parse(readTestdata(t, "node-feedparser__invalid-characters-gzipped.xml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(feed.Items) != 25 {
		t.Errorf("gzip body: %d items, want 25", len(feed.Items))
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    []byte
		wantMsg string
	}{
		{"empty", nil, "empty document"},
		{"whitespace only", []byte(" \n\t "), "empty document"},
		{"html page", []byte("<!DOCTYPE html><html><head><title>Moved</title></head><body>Document moved</body></html>"), "document is HTML"},
		{"html without doctype", []byte("<html><body>x</body></html>"), "document is HTML"},
		{"other xml", []byte(`<?xml version="1.0"?><opml version="2.0"><body/></opml>`), "root element <opml>"},
		{"plain text", []byte("Service Unavailable"), "neither XML nor JSON"},
		{"truncated inside the root tag", []byte(`<?xml version="1.0"?><rss version="2.0"`), "root element <rss>"},
		{"json that is not a json feed", []byte(`{"rss":{"version":"2.0","channel":{"title":"x"}}}`), "not a JSON Feed"},
		{"broken json", []byte(`{"version":"https://jsonfeed.org/version/1", "items": [`), "parse feed"},
		{"corrupt gzip", append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, "garbage"...), "gzip body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, err := Parse(tt.body, "text/xml")
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, %v; want a *ParseError", feed, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			if got := Class(err); got != ClassParse {
				t.Errorf("Class = %q, want %q", got, ClassParse)
			}
		})
	}
}

func TestParseGzipBombWithoutContentEncoding(t *testing.T) {
	t.Parallel()
	bomb := gzipped(t, make([]byte, 2<<20))
	_, _, err := parse(bomb, "", 1<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("parse = %v, want ErrTooLarge", err)
	}
}

func TestFeedHintTTL(t *testing.T) {
	t.Parallel()
	feed, err := Parse(readTestdata(t, "feed-rs__rss_2.0_spec_1.xml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := feedHint(feed), 40*time.Minute; got != want {
		t.Errorf("ttl hint = %v, want %v", got, want)
	}
	atom, err := Parse(readTestdata(t, "simplepie__feed-with-whitespace-before-xml-declaration.xml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := feedHint(atom); got != 0 {
		t.Errorf("atom hint = %v, want 0", got)
	}
	bad, err := Parse([]byte(`<rss version="2.0"><channel><title>x</title><ttl>soon</ttl></channel></rss>`), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := feedHint(bad); got != 0 {
		t.Errorf("hint for ttl 'soon' = %v, want 0", got)
	}
}

// FuzzParse checks that no input makes Parse panic or return anything but a
// feed or a *ParseError / ErrTooLarge.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"feed-rs__rss_2.0_spec_1.xml", "atoma__podcast.json", "simplepie__feed-with-whitespace-before-xml-declaration.xml", "feedparser-py__koi8r.xml"} {
		f.Add(readTestdata(f, name), "text/xml")
	}
	f.Add(utf16Bytes(rssWithTitle(`<?xml version="1.0" encoding="utf-16"?>`, "x"), false, true), "")
	f.Add([]byte("<rss><channel><item><title>&#1;\x02</title>"), "text/html; charset=big5")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		feed, _, err := parse(body, contentType, 1<<20)
		var pe *ParseError
		switch {
		case err == nil && feed == nil:
			t.Fatal("nil feed without error")
		case err != nil && !errors.As(err, &pe) && !errors.Is(err, ErrTooLarge):
			t.Fatalf("error %v (%T) is neither a *ParseError nor ErrTooLarge", err, err)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"feed-rs__rss_2.0_spec_1.xml", "miniflux__encoding_WINDOWS-1251.xml", "atoma__podcast.json"} {
		body := readTestdata(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(body, "application/xml"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseAtomWrappedInXHTML reads the one Atom feed an XHTML page holds,
// as some servers send it, and still refuses pages with none or several.
func TestParseAtomWrappedInXHTML(t *testing.T) {
	t.Parallel()
	atom := `<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>urn:x</id>` +
		`<entry><title>One</title><id>urn:1</id><link href="https://example.org/1"/></entry></feed>`
	page := `<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><body>%s</body></html>`
	f, err := Parse([]byte(fmt.Sprintf(page, atom)), "application/xhtml+xml")
	if err != nil {
		t.Fatalf("wrapped feed: %v", err)
	}
	if len(f.Items) != 1 || f.Items[0].Title != "One" {
		t.Errorf("wrapped feed items = %+v", f.Items)
	}
	for name, body := range map[string]string{
		"two feeds":       fmt.Sprintf(page, atom+atom),
		"no namespace":    fmt.Sprintf(page, strings.Replace(atom, ` xmlns="http://www.w3.org/2005/Atom"`, "", 1)),
		"no feed element": fmt.Sprintf(page, "<p>moved</p>"),
	} {
		if _, err := Parse([]byte(body), "text/html"); err == nil || !strings.Contains(err.Error(), "HTML") {
			t.Errorf("%s: error %v, want one saying the document is HTML", name, err)
		}
	}
}
