package transform

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"

	"github.com/feedworker/feedworker/config"
)

// Full-text modes (full_text in the configuration).
const (
	FullTextNever  = "never"
	FullTextAuto   = "auto"
	FullTextAlways = "always"
)

// fullText is a mapping's full-text settings.
type fullText struct {
	mode     string
	minChars int
	selector string
}

// compileFullText checks the full-text settings of m.
func (c *compiler) compileFullText(m config.Mapping) fullText {
	def := *config.Default().Defaults.Mapping.FullTextMinChars
	ft := fullText{mode: FullTextNever, minChars: c.positiveOrZero("full_text_min_chars", m.FullTextMinChars, def)}
	if m.FullText != nil {
		switch mode := strings.ToLower(strings.TrimSpace(*m.FullText)); mode {
		case FullTextNever, FullTextAuto, FullTextAlways:
			ft.mode = mode
		default:
			c.add("full_text", fmt.Errorf("want never, auto or always, got %q", *m.FullText))
		}
	}
	if m.FullTextSelector != nil {
		sel := strings.TrimSpace(*m.FullTextSelector)
		if _, err := cascadia.ParseGroup(sel); sel == "" || err != nil {
			c.add("full_text_selector", fmt.Errorf("not a CSS selector: %q", sel))
		}
		ft.selector = sel
	}
	return ft
}

func (c *compiler) positiveOrZero(path string, v *int, def int) int {
	if v == nil {
		return def
	}
	if *v < 0 {
		c.add(path, fmt.Errorf("must not be negative, got %d", *v))
		return def
	}
	return *v
}

// FullTextSelector is the CSS selector of the article's main content on its
// page ("" for readability), for the worker's article fetch.
func (m *Mapping) FullTextSelector() string { return m.fullText.selector }

// truncationMarkers end the text of an item whose feed carries only the
// start of the story. Compared case-insensitively after trimming.
var truncationMarkers = []string{
	"…", "...", "[…]", "[...]", "(…)", "(...)", "read more", "read more »", "read more →", "read more…",
	"continue reading", "continue reading →", "(more…)", "(more...)", "more »",
}

// wants decides whether the article page should replace the item's body:
// never without a link; always; or, in auto, when the item's text is missing, shorter than
// full_text_min_chars, or ends in a truncation marker. text is the plain
// text of the body the feed gave.
func (ft fullText) wants(text, link string) bool {
	if link == "" {
		return false
	}
	switch ft.mode {
	case FullTextAlways:
		return true
	case FullTextAuto:
		text = strings.TrimSpace(text)
		if utf8.RuneCountInString(text) < ft.minChars {
			return true
		}
		lower := strings.ToLower(text)
		for _, m := range truncationMarkers {
			if strings.HasSuffix(lower, m) {
				return true
			}
		}
	}
	return false
}

// ResolveFullText completes a result that needed its article (NeedsFullText):
// articleHTML is the page's main content ("" when the fetch failed) and
// pageURL the page's final URL. The content goes through the same steps as
// feed content (junk and tracking pixels removed, URLs made absolute
// against the page, the same sanitizing allowlist, images kept) and becomes
// the body; the summary stays the feed's. The item's image becomes the
// article's first sizeable picture when it had none. When articleHTML is
// empty or sanitizes to nothing the feed's text stays the body. It does
// nothing unless NeedsFullText is set.
func (r *Result) ResolveFullText(articleHTML, pageURL string) {
	if !r.NeedsFullText || r.Payload == nil {
		return
	}
	r.NeedsFullText = false
	if strings.TrimSpace(articleHTML) == "" {
		return
	}
	base := parseBase(pageURL)
	if base == nil {
		base = parseBase(r.Payload.ExternalURL)
	}
	c := parseContent(articleHTML, base)
	body := sharedSanitizer().sanitize(c)
	if strings.TrimSpace(plainText(body)) == "" && !strings.Contains(body, "<img") {
		return
	}
	p := r.Payload
	p.Body = body
	if p.ImageURL == "" && c.image != "" {
		p.ImageURL = c.image
	}
	p.Hash = p.computeHash()
}
