package transform

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
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
				s, hasHost, ok := j.validURL(a.Val)
				if !ok {
					continue
				}
				if key == "href" {
					hrefFound = true
					external = external || hasHost
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
// refused), written back by net/url. hasHost says whether the written URL
// has a host when parsed again, as bluemonday parses it for its link rules.
// A plain URL (see plainURL; the DOM steps write most links so) is written
// back as it is, with its host, and is not parsed.
func (j *tagJudge) validURL(raw string) (s string, hasHost, ok bool) {
	raw = strings.TrimSpace(raw)
	if strings.ContainsAny(raw, " \t\n") {
		// bluemonday would clean up a data: URI first; data is not an
		// allowed scheme (newTagJudge refuses it).
		return "", false, false
	}
	if _, _, plain := plainURL(raw); plain {
		scheme, _, _ := strings.Cut(raw, ":")
		return raw, true, j.schemes[scheme]
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !j.schemes[u.Scheme] {
		return "", false, false
	}
	s = u.String()
	if s != raw {
		// The same text parses the same: only a rewritten URL is parsed
		// again.
		u, _ = url.Parse(s)
	}
	return s, u != nil && u.Host != "", true
}

// judgeProbe is one start tag the judge and bluemonday must write alike.
type judgeProbe struct {
	name  string
	attrs []html.Attribute
}

// judgeProbes are hand-written tags, each the hard case of one rule: URLs
// that do not parse, are relative, have another scheme, white space, or
// are rewritten by net/url; links to other hosts and not; patterns that
// match and do not; attributes the policy does not know; tags left with no
// attribute. newBodySanitizer asks both at every start, so that a policy
// changed beyond what the judge models, or a bluemonday that judges
// otherwise, falls back to bluemonday instead of writing other bodies.
func judgeProbes() []judgeProbe {
	a := func(kv ...string) []html.Attribute {
		var out []html.Attribute
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, html.Attribute{Key: kv[i], Val: kv[i+1]})
		}
		return out
	}
	return []judgeProbe{
		{"a", a("href", "https://example.org/x?a=1&b=2#f")},
		{"a", a("href", "/relative")},
		{"a", a("href", "//example.org/protocol-relative")},
		{"a", a("href", "mailto:someone@example.org", "title", "mail")},
		{"a", a("href", "javascript:alert(1)", "title", "t")},
		{"a", a("href", "JavaScript:alert(1)")},
		{"a", a("href", "HTTPS://Example.org/Upper")},
		{"a", a("href", "  https://example.org/trimmed \u00a0")},
		{"a", a("href", "https://example.org/a b")},
		{"a", a("href", "https://example.org/tab\there")},
		{"a", a("href", "https://example.org/nl\nhere")},
		{"a", a("href", "https://example.org/cr\rhere")},
		{"a", a("href", "https://example.org/ctl\x01")},
		{"a", a("href", "https://example.org/ünïcode/パス?q=é")},
		{"a", a("href", "https://example.org/%zz")},
		{"a", a("href", "https://[::1]:80/")},
		{"a", a("href", "https://user:pass@example.org/")},
		{"a", a("href", "http://")},
		{"a", a("href", "http:opaque")},
		{"a", a("href", "https:///no-host")},
		{"a", a("href", "")},
		{"a", a("href", "https://example.org/1", "href", "/2")},
		{"a", a("href", "/1", "href", "https://example.org/2")},
		{"img", a("alt", "1", "src", "https://example.org/i.png", "alt", "2")},
		{"a", a("title", "only a title")},
		{"a", a("rel", "opener", "target", "_self", "href", "https://example.org/")},
		{"a", a("class", "x", "style", "color:red", "onclick", "x()")},
		{"a", a("href", "https://example.org/", "lang", "en-GB", "dir", "RTL", "title", `"q" & <b>`)},
		{"img", a("src", "https://example.org/i.png", "width", "640", "height", "360", "alt", "a")},
		{"img", a("src", "https://example.org/i.png", "width", "10%", "height", "123456", "style", "width:1px")},
		{"img", a("src", "https://example.org/i.png", "width", "00100", "height", " 1")},
		{"img", a("src", "/relative.png", "alt", "kept without src")},
		{"img", a("src", "data:image/png;base64,AAAA")},
		{"img", a("src", "data:image/png;base64,AA AA")},
		{"img", a("srcset", "https://example.org/1.png 1x", "data-src", "https://example.org/2.png")},
		{"img", a("title", "t")},
		{"td", a("colspan", "2", "rowspan", "x")},
		{"th", a("colspan", "")},
		{"ol", a("start", "3", "type", "i")},
		{"ul", a("start", "3")},
		{"blockquote", a("cite", "https://example.org/q")},
		{"blockquote", a("cite", "/relative")},
		{"q", a("cite", "mailto:x@example.org")},
		{"del", a("cite", "https://example.org/why", "datetime", "2024-01-01T10:00Z")},
		{"ins", a("datetime", "bad!")},
		{"time", a("datetime", "2024-01-01 10:00:00+01:00")},
		{"time", a("datetime", "123")},
		{"abbr", a("title", "HyperText")},
		{"dfn", a("title", "t", "id", "x")},
		{"span", a("title", "not on span")},
		{"p", a("lang", "x")},
		{"p", a("lang", "zh-Hant-TW", "dir", "auto")},
		{"div", a("dir", "sideways")},
		{"br", a("class", "x")},
		{"hr", a("lang", "en")},
		{"pre", a("lang", "en")},
	}
}

// disagreement is the first probe on which the judge and p write
// differently, described; "" when they agree on all.
func (j *tagJudge) disagreement(p *bluemonday.Policy) string {
	for _, pr := range judgeProbes() {
		void := isVoid(pr.name)
		got, _ := j.appendVerdict(nil, pr.name, pr.attrs, void, nil)
		if want := p.Sanitize(tagString(pr.name, pr.attrs, void)); string(got) != want {
			return fmt.Sprintf("<%s %v>: the judge writes %q, bluemonday %q", pr.name, pr.attrs, got, want)
		}
	}
	return ""
}
