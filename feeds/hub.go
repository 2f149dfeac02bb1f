package feeds

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/atom"
)

// discoverHub finds a feed's WebSub hub and topic (W3C WebSub 4): Link
// headers first (rel="hub", rel="self"), then the document's own
// <atom:link> elements (in an Atom feed, or an RSS feed with the Atom
// namespace). Both must be absolute http(s) URLs; hub is "" when the feed
// names none. topic is the feed's self URL, which is what the hub knows it
// by; "" when it gives none (the caller then uses the URL it fetched).
func discoverHub(h http.Header, feed *gofeed.Feed) (hub, topic string) {
	for _, v := range h.Values("Link") {
		for _, l := range strings.Split(v, ",") {
			target, rels := parseLink(l)
			for _, rel := range rels {
				switch {
				case rel == "hub" && hub == "":
					hub = target
				case rel == "self" && topic == "":
					topic = target
				}
			}
		}
	}
	if feed != nil {
		var links []*atom.Link
		if af, ok := feed.OriginalFeed().(*atom.Feed); ok && af != nil {
			links = af.Links
		}
		for _, e := range feed.Extensions["atom"]["link"] {
			links = append(links, &atom.Link{Rel: e.Attrs["rel"], Href: e.Attrs["href"]})
		}
		for _, l := range links {
			if l == nil {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(l.Rel)) {
			case "hub":
				if hub == "" {
					hub = strings.TrimSpace(l.Href)
				}
			case "self":
				if topic == "" {
					topic = strings.TrimSpace(l.Href)
				}
			}
		}
	}
	if !absHTTP(hub) {
		return "", ""
	}
	if !absHTTP(topic) {
		topic = ""
	}
	return hub, topic
}

// parseLink reads one link-value of a Link header (RFC 8288):
// <target>; rel="a b".
func parseLink(s string) (target string, rels []string) {
	s = strings.TrimSpace(s)
	start, end := strings.IndexByte(s, '<'), strings.IndexByte(s, '>')
	if start != 0 || end < 0 {
		return "", nil
	}
	target = strings.TrimSpace(s[1:end])
	for p := range strings.SplitSeq(s[end+1:], ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "rel") {
			rels = append(rels, strings.Fields(strings.ToLower(strings.Trim(strings.TrimSpace(v), `"`)))...)
		}
	}
	return target, rels
}

func absHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
