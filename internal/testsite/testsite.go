// Package testsite serves a small news site for tests of full-text
// extraction: a feed whose items carry one-line summaries, and article
// pages that wrap each story in what real pages wrap it in (navigation,
// ads, a cookie banner, scripts, a comment section, related links, a
// footer). Every piece of boilerplate carries a marker word, so a test can
// check that none of it reached the body.
package testsite

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Stories is how many articles the site has.
const Stories = 3

// Paragraphs is how many paragraphs each story has.
const Paragraphs = 12

// Boilerplate are the marker words of everything around the story.
var Boilerplate = []string{"NAVMARK", "ADMARK", "COOKIEMARK", "SCRIPTMARK", "COMMENTMARK", "RELATEDMARK", "FOOTERMARK", "NEWSLETTERMARK", "SHAREMARK"}

// Paragraph is the text of paragraph p (0-based) of story s (1-based).
func Paragraph(s, p int) string {
	return fmt.Sprintf("Story %d paragraph %d: the council met on Tuesday evening to discuss the new tram line, "+
		"the budget for the coming year and the renovation of the old library, and residents spoke at length "+
		"about the noise, the trees along the avenue and the bus routes that would change in the spring.", s, p+1)
}

// Site is a running test site.
type Site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

// New starts the site; Close stops it.
func New() *Site {
	s := &Site{hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/feed.xml", func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		fmt.Fprint(w, s.feed())
	})
	mux.HandleFunc("/news/{n}", func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		n := 0
		if _, err := fmt.Sscanf(r.PathValue("n"), "story-%d.html", &n); err != nil || n < 1 || n > Stories {
			http.NotFound(w, r)
			return
		}
		etag := fmt.Sprintf(`"story-%d-v1"`, n)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, Page(n))
	})
	s.Server = httptest.NewServer(mux)
	return s
}

func (s *Site) count(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[r.URL.Path+" "+r.Header.Get("If-None-Match")]++
}

// Hits returns how often path was requested, keyed by "path If-None-Match".
func (s *Site) Hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

// ArticleURL is the page of story n.
func (s *Site) ArticleURL(n int) string { return fmt.Sprintf("%s/news/story-%d.html", s.URL, n) }

func (s *Site) feed() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>City news</title>`)
	fmt.Fprintf(&b, `<link>%s/</link>`, s.URL)
	for n := 1; n <= Stories; n++ {
		fmt.Fprintf(&b, `<item><title>Story %d</title><link>%s</link><guid>story-%d</guid>`+
			`<description>Summary %d: the council met about the tram line. Read more</description></item>`,
			n, s.ArticleURL(n), n, n)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// Page is the article page of story n.
func Page(n int) string {
	var story strings.Builder
	for p := range Paragraphs {
		if p == 4 {
			fmt.Fprintf(&story, `<figure><img src="/img/story-%d.jpg" width="800" height="450" alt="The tram"><figcaption>The new tram line.</figcaption></figure>`, n)
			story.WriteString(`<div class="ad-slot sponsor"><script>var SCRIPTMARK=1;</script><p>ADMARK advertisement</p></div>`)
		}
		fmt.Fprintf(&story, "<p>%s</p>\n", Paragraph(n, p))
	}
	fmt.Fprintf(&story, `<p>More on the <a href="/topics/trams">tram line</a>.</p>`)
	return fmt.Sprintf(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Story %[1]d | City News</title>
<meta property="og:image" content="/img/story-%[1]d.jpg">
<script>window.SCRIPTMARK = {tracking: true}; document.write("SCRIPTMARK");</script>
<style>.SCRIPTMARK { color: red }</style>
</head><body>
<div id="cookie-banner" class="cookie-consent gdpr"><p>COOKIEMARK We use cookies to improve your experience. By using this site you accept them.</p><button>Accept</button></div>
<header class="site-header"><nav class="menu"><ul><li><a href="/">NAVMARK Home</a></li><li><a href="/news">NAVMARK News</a></li><li><a href="/sport">NAVMARK Sport</a></li><li><a href="/weather">NAVMARK Weather</a></li></ul></nav></header>
<div class="ad-banner advertisement"><p>ADMARK Buy the best mattress today, fifty percent off for readers of City News only this week.</p></div>
<main>
<article class="story">
<h1>Story %[1]d</h1>
<p class="byline">By A. Reporter</p>
<div class="story-body">
%[2]s
</div>
<div class="share social"><a href="https://share.example/x">SHAREMARK Share</a> <a href="https://share.example/y">SHAREMARK Tweet</a></div>
</article>
<section id="comments" class="comments">
<h2>COMMENTMARK Comments</h2>
<div class="comment"><p>COMMENTMARK I disagree with the council entirely; the tram line should go along the river instead of the avenue, everyone knows that.</p></div>
<div class="comment"><p>COMMENTMARK The library renovation is long overdue and the budget is far too small for what the building needs after so many years.</p></div>
<div class="comment"><p>COMMENTMARK Who will pay for all of this? Taxes are already high enough in this city and nobody asked the residents what they want.</p></div>
</section>
</main>
<aside class="sidebar related"><h3>RELATEDMARK Related</h3><ul><li><a href="/news/1">RELATEDMARK Other story one</a></li><li><a href="/news/2">RELATEDMARK Other story two</a></li></ul></aside>
<div class="newsletter-signup"><form><p>NEWSLETTERMARK Sign up for our newsletter</p><input name="email"></form></div>
<footer class="site-footer"><p>FOOTERMARK © City News. All rights reserved. Contact, imprint, privacy policy.</p></footer>
<script src="/js/app.js"></script><script>console.log("SCRIPTMARK")</script>
</body></html>`, n, story.String())
}
