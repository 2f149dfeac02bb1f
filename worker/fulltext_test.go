package worker

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedworker/feedworker/article"
	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/internal/testsite"
	"github.com/feedworker/feedworker/transform"
)

// fullTextHTTP is the http section of the tests: the site runs on
// loopback, which only allow_networks lets through the address guard.
func fullTextHTTP(allow ...string) config.HTTP {
	return config.HTTP{Timeout: config.Duration(10 * time.Second), MaxBodySize: 1 << 20, PerHostConcurrency: 2, AllowNetworks: allow}
}

// pollWithFullText fetches the site's feed, maps it and fills the full
// text, as a poll does.
func pollWithFullText(t *testing.T, site *testsite.Site, af *article.Fetcher, m config.Mapping) []transform.Result {
	t.Helper()
	ff, err := feeds.NewFetcher(fullTextHTTP())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ff.Fetch(t.Context(), site.URL+"/feed.xml", feeds.Validators{})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := transform.Compile("site", m)
	if err != nil {
		t.Fatal(err)
	}
	results := mp.Map(res.Feed, time.Now())
	FillFullText(t.Context(), af, slog.New(slog.NewTextHandler(io.Discard, nil)), "site", mp.FullTextSelector(), results)
	if len(results) != testsite.Stories {
		t.Fatalf("%d results, want %d", len(results), testsite.Stories)
	}
	return results
}

func newArticles(t *testing.T, h config.HTTP, reg prometheus.Registerer) *article.Fetcher {
	t.Helper()
	af, err := NewArticleFetcher(h, reg)
	if err != nil {
		t.Fatal(err)
	}
	return af
}

// TestFullTextFromLocalSite: a feed of one-line summaries whose article
// pages wrap the story in navigation, ads, a cookie banner, scripts, a
// comment section, related links and a footer. The body must hold every
// paragraph of the story, its picture and links made absolute, and none of
// the rest, with a selector and with readability; the summary stays the
// feed's.
func TestFullTextFromLocalSite(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	t.Cleanup(site.Close)
	for _, tc := range []struct {
		name     string
		selector *string
	}{
		{"readability", nil},
		{"selector", ptr(".story-body")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			af := newArticles(t, fullTextHTTP("127.0.0.0/8", "::1"), nil)
			results := pollWithFullText(t, site, af, config.Mapping{FullText: ptr("auto"), FullTextSelector: tc.selector})
			for i, r := range results {
				n := i + 1
				if r.Payload == nil || r.NeedsFullText {
					t.Fatalf("story %d: result %+v", n, r)
				}
				body := r.Payload.Body
				for p := range testsite.Paragraphs {
					if want := testsite.Paragraph(n, p); !strings.Contains(body, want) {
						t.Errorf("story %d: body lacks paragraph %d", n, p+1)
					}
				}
				for _, m := range testsite.Boilerplate {
					if strings.Contains(body, m) {
						t.Errorf("story %d: body holds boilerplate %s:\n%s", n, m, body)
					}
				}
				for _, want := range []string{`<img src="` + site.URL + fmt.Sprintf("/img/story-%d.jpg", n), `href="` + site.URL + `/topics/trams"`} {
					if !strings.Contains(body, want) {
						t.Errorf("story %d: body lacks %s", n, want)
					}
				}
				if strings.Contains(body, "<script") || strings.Contains(body, "<style") || strings.Contains(body, "<form") {
					t.Errorf("story %d: body holds active content:\n%s", n, body)
				}
				if want := fmt.Sprintf("Summary %d:", n); !strings.HasPrefix(r.Payload.Summary, want) {
					t.Errorf("story %d: summary = %q, want the feed's %q...", n, r.Payload.Summary, want)
				}
				if r.Payload.ImageURL == "" {
					t.Errorf("story %d: no image from the article", n)
				}
				if n == 1 {
					page := testsite.Page(1)
					t.Logf("%s: story 1 page has %d bytes of HTML, %d characters of text; the body keeps %d characters of text (%d bytes of HTML), every boilerplate marker removed; the feed gave %d",
						tc.name, len(page), utf8.RuneCountInString(bodyText(page)), utf8.RuneCountInString(bodyText(body)), len(body),
						len("Summary 1: the council met about the tram line. Read more"))
				}
			}
		})
	}
}

// TestFullTextCached: a second poll within the freshness
// window sends no request for the articles; the fetcher's cache answers.
func TestFullTextCached(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	t.Cleanup(site.Close)
	reg := prometheus.NewPedanticRegistry()
	af := newArticles(t, fullTextHTTP("127.0.0.1/32"), reg)
	m := config.Mapping{FullText: ptr("always")}
	first := pollWithFullText(t, site, af, m)
	second := pollWithFullText(t, site, af, m)
	for i := range first {
		if first[i].Payload.Hash != second[i].Payload.Hash {
			t.Errorf("story %d: hash changed between polls", i+1)
		}
	}
	hits := site.Hits()
	for n := 1; n <= testsite.Stories; n++ {
		if got := hits["/news/story-"+fmt.Sprint(n)+".html "]; got != 1 {
			t.Errorf("story %d fetched %d times, want once; hits %v", n, got, hits)
		}
	}
	if got := fullTextCount(t, reg, "cached"); got != testsite.Stories {
		t.Errorf("cached fetches = %v, want %d", got, testsite.Stories)
	}
}

// TestFullTextFailureKeepsFeedText: the guard refuses the loopback site
// without allow_networks, and a selector that matches nothing fails too;
// either way the feed's text stays the body, and the failure is counted by
// cause.
func TestFullTextFailureKeepsFeedText(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	t.Cleanup(site.Close)
	for _, tc := range []struct {
		name  string
		h     config.HTTP
		m     config.Mapping
		cause string
	}{
		{"guard", fullTextHTTP(), config.Mapping{FullText: ptr("auto")}, article.CauseBlocked},
		{"other network allowed", fullTextHTTP("10.0.0.0/8"), config.Mapping{FullText: ptr("auto")}, article.CauseBlocked},
		{"no match", fullTextHTTP("127.0.0.0/8"), config.Mapping{FullText: ptr("auto"), FullTextSelector: ptr(".no-such-class")}, article.CauseNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			af := newArticles(t, tc.h, reg)
			for i, r := range pollWithFullText(t, site, af, tc.m) {
				if r.Payload == nil || r.Skip != "" || r.Err != nil {
					t.Fatalf("story %d: %+v", i+1, r)
				}
				if want := fmt.Sprintf("Summary %d:", i+1); !strings.Contains(r.Payload.Body, want) {
					t.Errorf("story %d: body = %q, want the feed's text", i+1, r.Payload.Body)
				}
			}
			if got := fullTextCount(t, reg, tc.cause); got != testsite.Stories {
				t.Errorf("failures with cause %s = %v, want %d", tc.cause, got, testsite.Stories)
			}
		})
	}
}

// TestFullTextNotWanted: by default (never) no article is fetched.
func TestFullTextNotWanted(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	t.Cleanup(site.Close)
	af := newArticles(t, fullTextHTTP("127.0.0.0/8"), nil)
	for _, m := range []config.Mapping{{}, {FullText: ptr("never")}} {
		_ = pollWithFullText(t, site, af, m)
	}
	for k := range site.Hits() {
		if strings.HasPrefix(k, "/news/") {
			t.Errorf("article fetched though full text was not wanted: %s", k)
		}
	}
}

// bodyText is the text of an HTML body, for the log.
func bodyText(h string) string {
	var b strings.Builder
	in := false
	for _, r := range h {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// fullTextCount reads feedworker_full_text_fetches_total{feed="site",result}.
func fullTextCount(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "feedworker_full_text_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, map[string]string{"feed": "site", "result": result}) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsAre(m *dto.Metric, want map[string]string) bool {
	for _, l := range m.GetLabel() {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return len(m.GetLabel()) == len(want)
}

func ptr[T any](v T) *T { return &v }
