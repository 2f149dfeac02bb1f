package feeds

import (
	"errors"
	"net/http"
	"testing"
)

func TestDiscoverHub(t *testing.T) {
	t.Parallel()
	atomDoc := `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
<link rel="hub" href="https://pubsubhubbub.example.com/"/><link rel="self" href="https://blog.example.org/feed.atom"/>
<entry><title>a</title><id>1</id></entry></feed>`
	rssDoc := `<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>t</title>
<atom:link rel="self" href="https://news.example.org/rss"/><atom:link rel="hub" href="https://hub.example.net/"/>
<item><title>a</title></item></channel></rss>`
	plain := `<rss version="2.0"><channel><title>t</title><item><title>a</title></item></channel></rss>`
	for _, tt := range []struct {
		name, doc, link string
		hub, topic      string
	}{
		{"atom", atomDoc, "", "https://pubsubhubbub.example.com/", "https://blog.example.org/feed.atom"},
		{"rss with atom:link", rssDoc, "", "https://hub.example.net/", "https://news.example.org/rss"},
		{"link header wins", rssDoc, `<https://h2.example/hub>; rel="hub", <https://news.example.org/rss?x=1>; rel="self"`, "https://h2.example/hub", "https://news.example.org/rss?x=1"},
		{"none", plain, "", "", ""},
		{"relative hub ignored", plain, `</hub>; rel=hub`, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, err := Parse([]byte(tt.doc), "")
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			if tt.link != "" {
				h.Set("Link", tt.link)
			}
			hub, topic := discoverHub(h, feed)
			if hub != tt.hub || topic != tt.topic {
				t.Errorf("discoverHub = %q, %q; want %q, %q", hub, topic, tt.hub, tt.topic)
			}
		})
	}
}

// TestParseCalendarBad: go-ical panics on some malformed lines; that, a
// truncated calendar and a non-calendar are each one *ParseError.
func TestParseCalendarBad(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"0;0=", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\n", "BEGIN:VEVENT\r\nEND:VEVENT\r\n", ""} {
		_, err := ParseCalendar([]byte(src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("ParseCalendar(%q) = %v, want a *ParseError", src, err)
		}
	}
}
