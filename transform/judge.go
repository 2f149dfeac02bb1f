package transform

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// tagJudge writes, for the start tag of an element the body policy allows,
// what bluemonday writes for that tag alone: the attributes the rules of
// bodyAttrRules keep, URLs checked and rewritten as bluemonday's validURL
// does, rel and target added to links to other hosts, and nothing for a
// tag left without attributes that the policy allows only with some.
// Asking bluemonday itself was a third of the mapping's CPU: a tokenizer
// pass, a token with its strings, and three URL parses per link.
// TestTagJudge and FuzzTagJudge compare the two tag by tag; the bodies'
// corpus tests compare them body by body.
//
// It models the options newPolicy sets and no others: no styles, data
// attributes, element patterns, URL policies or relative URLs, and no rule
// allowing rel or target (newTagJudge refuses one).
type tagJudge struct {
	elements map[string]map[string][]*regexp.Regexp // per element, per attribute: the rules' patterns (nil: any value)
	global   map[string][]*regexp.Regexp
	schemes  map[string]bool
	// bare is bluemonday's verdict on each allowed element's tag without
	// attributes ("" when it drops it).
	bare map[string]string
}

func newTagJudge(rules []attrRule, schemes []string, bare map[string]string) *tagJudge {
	j := &tagJudge{elements: map[string]map[string][]*regexp.Regexp{}, global: map[string][]*regexp.Regexp{}, schemes: map[string]bool{}, bare: bare}
	for _, s := range schemes {
		if s = strings.ToLower(s); s == "data" {
			panic("transform: the tag judge does not model data: URLs")
		}
		j.schemes[s] = true
	}
	for _, r := range rules {
		for _, a := range r.attrs {
			a = strings.ToLower(a)
			if a == "rel" || a == "target" || a == "style" || strings.HasPrefix(a, "data-") {
				panic(fmt.Sprintf("transform: the tag judge does not model a rule allowing %s", a))
			}
			if r.elements == nil {
				j.global[a] = append(j.global[a], r.match)
				continue
			}
			for _, el := range r.elements {
				el = strings.ToLower(el)
				if j.elements[el] == nil {
					j.elements[el] = map[string][]*regexp.Regexp{}
				}
				j.elements[el][a] = append(j.elements[el][a], r.match)
			}
		}
	}
	return j
}

// appendVerdict appends the verdict on the tag to dst; clean is scratch
// space for the kept attributes, returned for reuse.
func (j *tagJudge) appendVerdict(dst []byte, name string, attrs []html.Attribute, void bool, clean []html.Attribute) ([]byte, []html.Attribute) {
	// The attributes some rule keeps, the element's rules first, in the
	// tag's order (bluemonday's sanitizeAttrs); of an attribute written
	// twice, the first (bluemonday's tokenizer drops the others).
	clean = clean[:0]
	rules := j.elements[name]
	for i, a := range attrs {
		if repeated(attrs[:i], a.Key) {
			continue
		}
		if allows(rules[a.Key], a.Val) || allows(j.global[a.Key], a.Val) {
			clean = append(clean, a)
		}
	}
	if len(clean) == 0 {
		return append(dst, j.bare[name]...), clean
	}
	// URLs: they must parse with an allowed scheme, and are written as
	// net/url writes them.
	var hrefFound, external bool
	if key := urlAttr(name); key != "" {
		kept := clean[:0]
		for _, a := range clean {
			if a.Key == key {
				u, s, ok := j.validURL(a.Val)
				if !ok {
					continue
				}
				if key == "href" {
					hrefFound = true
					// bluemonday parses the written URL again for its
					// host: the same text parses the same.
					if s != strings.TrimSpace(a.Val) {
						u, _ = url.Parse(s)
					}
					external = external || u != nil && u.Host != ""
				}
				a.Val = s
			}
			kept = append(kept, a)
		}
		clean = kept
	}
	if len(clean) == 0 {
		return append(dst, j.bare[name]...), clean
	}
	// A link to another host: no rel or target is kept above, so both
	// are added (noopener because of the target, on <a> only).
	if hrefFound && external {
		if name == "a" {
			clean = append(clean, html.Attribute{Key: "rel", Val: "nofollow noopener"}, html.Attribute{Key: "target", Val: "_blank"})
		} else {
			clean = append(clean, html.Attribute{Key: "rel", Val: "nofollow"})
		}
	}
	return appendTag(dst, name, clean, void), clean
}

func repeated(attrs []html.Attribute, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

func allows(patterns []*regexp.Regexp, val string) bool {
	for _, p := range patterns {
		if p == nil || p.MatchString(val) {
			return true
		}
	}
	return false
}

// urlAttr is the attribute bluemonday checks as a URL on an element, if
// any: its linkable elements and the attribute its switch checks on each.
func urlAttr(name string) string {
	switch name {
	case "a", "area", "base", "link":
		return "href"
	case "blockquote", "del", "ins", "q":
		return "cite"
	case "audio", "embed", "iframe", "img", "script", "track", "video":
		return "src"
	}
	return ""
}

// validURL is bluemonday's validURL for the policy: the URL trimmed, with
// no white space inside, parsed, with an allowed scheme (relative URLs are
// refused), written back by net/url.
func (j *tagJudge) validURL(raw string) (*url.URL, string, bool) {
	raw = strings.TrimSpace(raw)
	if strings.ContainsAny(raw, " \t\n") {
		// bluemonday would clean up a data: URI first; data is not an
		// allowed scheme (newTagJudge refuses it).
		return nil, "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !j.schemes[u.Scheme] {
		return nil, "", false
	}
	return u, u.String(), true
}
