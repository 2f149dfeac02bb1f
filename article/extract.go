package article

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/PuerkitoBio/goquery"
)

// ErrNoMatch is returned when the selector matches nothing on the page.
var ErrNoMatch = errors.New("the full_text_selector matches nothing on the page")

// ErrNoContent is returned when readability finds no main content.
var ErrNoContent = errors.New("no main content found on the page")

// noise are elements removed from what a selector picked: they are never
// the story, and some (forms, share buttons) would survive sanitizing as
// stray text.
const noise = "script, style, noscript, template, iframe, object, embed, form, button, input, select, textarea, " +
	"nav, aside, svg, [hidden], [aria-hidden=true]"

// Extract returns the main content of page (UTF-8 HTML) as an HTML
// fragment: the elements selector matches, in document order, or without
// a selector what readability finds. pageURL is the page's final URL;
// readability resolves relative links against it (the caller resolves
// again when it sanitizes).
func Extract(page []byte, pageURL *url.URL, selector string) (string, error) {
	if selector != "" {
		return extractSelector(page, selector)
	}
	p := readability.NewParser()
	art, err := p.Parse(bytes.NewReader(page), pageURL)
	if err != nil {
		return "", fmt.Errorf("readability: %w", err)
	}
	if art.Node == nil {
		return "", ErrNoContent
	}
	var b strings.Builder
	if err := art.RenderHTML(&b); err != nil {
		return "", fmt.Errorf("render article: %w", err)
	}
	if !hasText(b.String()) {
		return "", ErrNoContent
	}
	return b.String(), nil
}

func extractSelector(page []byte, selector string) (string, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		return "", fmt.Errorf("parse page: %w", err)
	}
	sel := doc.Find(selector)
	if sel.Length() == 0 {
		return "", ErrNoMatch
	}
	// A selector such as "article, article p" can match an element and its
	// descendants; keep only the outermost.
	sel = sel.NotSelection(sel.Find("*"))
	sel.Find(noise).Remove()
	// A region a selector picks still carries in-article ads, share bars
	// and newsletter boxes; their class or id says what they are.
	sel.Find("[class], [id]").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return isBoilerplate(s.AttrOr("class", "") + " " + s.AttrOr("id", ""))
	}).Remove()
	var b strings.Builder
	for i := range sel.Nodes {
		h, err := goquery.OuterHtml(sel.Eq(i))
		if err != nil {
			return "", fmt.Errorf("render selection: %w", err)
		}
		b.WriteString(h)
		b.WriteByte('\n')
	}
	if !hasText(b.String()) {
		return "", fmt.Errorf("%w (the selected elements hold no text)", ErrNoContent)
	}
	return b.String(), nil
}

// boilerplateWords are class and id words of page furniture (whole words of
// a class name split at "-" and "_", so "header" is not an "ad").
var boilerplateWords = map[string]bool{
	"ad": true, "ads": true, "advert": true, "advertisement": true, "adslot": true, "sponsor": true,
	"sponsored": true, "promo": true, "share": true, "sharing": true, "social": true, "related": true,
	"newsletter": true, "comment": true, "comments": true, "cookie": true, "cookies": true, "gdpr": true,
	"consent": true, "banner": true, "subscribe": true, "paywall": true, "outbrain": true, "taboola": true,
}

// isBoilerplate reports whether class and id words name page furniture.
func isBoilerplate(classAndID string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(classAndID), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '\t' || r == '\n'
	}) {
		if boilerplateWords[w] {
			return true
		}
	}
	return false
}

// hasText reports whether an HTML fragment shows any text or image.
func hasText(fragment string) bool {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(fragment))
	if err != nil {
		return false
	}
	return strings.TrimSpace(doc.Text()) != "" || doc.Find("img").Length() > 0
}
