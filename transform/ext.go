package transform

import (
	"fmt"
	"strings"

	"github.com/mmcdole/gofeed"
	ext "github.com/mmcdole/gofeed/extensions"
)

// extPath names a value in a feed item, as event and need settings write it:
//
//	prefix:element              ev:startdate, g:location
//	prefix:element/child/...    c:test_dateRange/c:start (child prefixes optional)
//	...@attribute               media:content@url, yweather:condition@date
//	element                     an item field (title, link, guid, published,
//	                            updated, description, content, author) or an
//	                            unknown RSS element without a namespace
//
// Prefixes are those gofeed reports: the canonical prefix for namespaces it
// knows (ev, dc, media, georss, ...) and the feed's own prefix otherwise.
// Names match exactly first, then ignoring case, because feeds disagree on
// the case of prefixes such as xCal.
type extPath struct {
	raw    string
	prefix string   // empty for an item field
	names  []string // element, then children
	attr   string
}

// parseExtPath checks and splits a path; see extPath.
func parseExtPath(s string) (extPath, error) {
	p := extPath{raw: s}
	s = strings.TrimSpace(s)
	if s == "" {
		return p, fmt.Errorf("empty path")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' }) {
		return p, fmt.Errorf("invalid path %q: contains white space", p.raw)
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		p.attr = s[i+1:]
		s = s[:i]
		if p.attr == "" || strings.ContainsAny(p.attr, "/:@") {
			return p, fmt.Errorf("invalid path %q: bad attribute after @", p.raw)
		}
	}
	parts := strings.Split(s, "/")
	for i, part := range parts {
		prefix, name, hasPrefix := strings.Cut(part, ":")
		if !hasPrefix {
			name, prefix = prefix, ""
		}
		if name == "" || strings.Contains(name, ":") || (hasPrefix && prefix == "") {
			return p, fmt.Errorf("invalid path %q: want prefix:element[/child...][@attribute]", p.raw)
		}
		if i == 0 {
			p.prefix = prefix
		}
		p.names = append(p.names, name)
	}
	if p.prefix == "" && (len(p.names) > 1 || p.attr != "") {
		return p, fmt.Errorf("invalid path %q: children and attributes need a prefix:element", p.raw)
	}
	return p, nil
}

// value returns the trimmed text (or attribute) the path names in item, or
// "" when the item does not have it.
func (p extPath) value(item *gofeed.Item) string {
	if len(p.names) == 0 {
		return ""
	}
	if p.prefix == "" {
		return strings.TrimSpace(itemField(item, p.names[0]))
	}
	byName := lookupFold(item.Extensions, p.prefix)
	if byName == nil {
		return ""
	}
	list := lookupFold(byName, p.names[0])
	for _, name := range p.names[1:] {
		if len(list) == 0 {
			return ""
		}
		list = lookupFold(list[0].Children, name)
	}
	for _, e := range list {
		v := e.Value
		if p.attr != "" {
			v = lookupFold(e.Attrs, p.attr)
		}
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// lookupFold looks key up exactly, then ignoring case.
func lookupFold[V any](m map[string]V, key string) V {
	if v, ok := m[key]; ok {
		return v
	}
	// Of several keys that differ only in case, take the least, so that the
	// answer (and so the payload hash) does not depend on map order.
	var best string
	var found V
	for k, v := range m {
		if strings.EqualFold(k, key) && (best == "" || k < best) {
			best, found = k, v
		}
	}
	return found
}

// itemField returns a named item field, or an unknown RSS element gofeed
// kept in Custom.
func itemField(item *gofeed.Item, name string) string {
	switch strings.ToLower(name) {
	case "title":
		return item.Title
	case "link":
		return item.Link
	case "guid", "id":
		return item.GUID
	case "published", "pubdate":
		return item.Published
	case "updated":
		return item.Updated
	case "description", "summary":
		return item.Description
	case "content":
		return item.Content
	case "author":
		if item.Author != nil {
			return item.Author.Name
		}
		return ""
	}
	return lookupFold(item.Custom, name)
}

// extValues returns the trimmed text of every prefix:name element of item.
func extValues(exts ext.Extensions, prefix, name string) []string {
	var out []string
	for _, e := range lookupFold(lookupFold(exts, prefix), name) {
		if v := strings.TrimSpace(e.Value); v != "" {
			out = append(out, v)
		}
	}
	return out
}
