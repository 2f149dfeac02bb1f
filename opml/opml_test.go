package opml

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseNested(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/feedly.opml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want := &Document{Title: "Jane subscriptions in feedly Cloud", Feeds: []Feed{
		{Title: "City Hall Press", XMLURL: "https://www.example.gov/press/rss.xml", HTMLURL: "https://www.example.gov/press", Type: "rss", Folders: []string{"News"}, Line: 8},
		{Title: "Local & Regional", XMLURL: "https://news.example.org/local.atom", Type: "rss", Folders: []string{"News"}, Line: 9},
		{Title: "Campus Calendar", XMLURL: "https://calendar.example.edu/events.ics", Type: "rss", Folders: []string{"Events", "Campus"}, Categories: []string{"/Culture/Lectures", "Free"}, Line: 13},
		{Title: "Café Müller Blog", XMLURL: "https://cafe.example.de/feed/", Type: "rss", Line: 16},
		{Title: "City Hall Press (again)", XMLURL: "HTTPS://WWW.example.gov/press/rss.xml/", Type: "rss", Line: 17},
	}}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
}

// TestParseErrors: each bad document is refused with the line at fault.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src, want string }{
		{"not xml", "just some text\n", "line 1: not XML"},
		{"broken xml", "<opml version=\"2.0\">\n<body>\n<outline text=\"a\" xmlUrl=\"https://a.example/f\">\n</body></opml>\n", "line 4: not well-formed XML"},
		{"html", "<!doctype html>\n<html><body></body></html>", "line 2: root element is <html>, want <opml>"},
		{"wrong root", "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"></rss>\n", "line 2: root element is <rss>, want <opml>"},
		{"empty", "", "empty document: no <opml> element"},
		{"no outlines", "<opml version=\"2.0\">\n<head><title>x</title></head>\n<body>\n</body>\n</opml>\n", "no outline: the document lists no feeds"},
		{"outline without xmlUrl", "<opml version=\"2.0\"><body>\n<outline text=\"ok\" xmlUrl=\"https://a.example/f\"/>\n  <outline text=\"Broken\" htmlUrl=\"https://b.example/\"/>\n</body></opml>\n",
			`line 3: outline "Broken" has no xmlUrl (and no outlines inside it)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse = %v, want an ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

// TestWriteReadsBack: what Write makes, Parse reads as the same feeds.
func TestWriteReadsBack(t *testing.T) {
	t.Parallel()
	feeds := []Feed{
		{Title: "news", XMLURL: "https://example.com/rss?a=1&b=2", Type: "rss", Categories: []string{"News", "City"}},
		{Title: "calendar", XMLURL: "https://example.com/cal.ics", Type: "ical"},
	}
	var b bytes.Buffer
	if err := Write(&b, "feedworker feeds", time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), feeds); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<opml version="2.0">`, "<dateCreated>Mon, 02 Mar 2026 12:00:00 +0000</dateCreated>", `xmlUrl="https://example.com/rss?a=1&amp;b=2"`, `category="News,City"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, b.String())
		}
	}
	doc, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Feeds {
		doc.Feeds[i].Line = 0
	}
	if diff := cmp.Diff(&Document{Title: "feedworker feeds", Feeds: feeds}, doc); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
