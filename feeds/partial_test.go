package feeds

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const partialRSSHead = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>Cut</title><link>https://example.com/</link>
<item><title>One</title><link>https://example.com/1</link><dc:creator>Ann</dc:creator></item>
<item><title>Two</title><link>https://example.com/2</link><description><![CDATA[<p>two</p>]]></description></item>
`

func TestParsePartial(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		doc       string
		wantTitle string
		want      []string // titles of the items kept
		wantCause string
	}{
		{"eof inside an item", partialRSSHead + `<item><title>Three</ti`, "Cut", []string{"One", "Two"}, "unexpected EOF"},
		{"eof between items", partialRSSHead, "Cut", []string{"One", "Two"}, "unexpected EOF"},
		{"eof inside a prefixed element", partialRSSHead + `<item><title>Three</title><dc:creator>Bo`, "Cut", []string{"One", "Two"}, "unexpected EOF"},
		{"eof inside a cdata section", partialRSSHead + `<item><title><![CDATA[Thr`, "Cut", []string{"One", "Two"}, "unexpected EOF"},
		{"broken cdata opener", partialRSSHead + `<item><title><![CD` + "\n", "Cut", []string{"One", "Two"}, "invalid <![ sequence"},
		{"missing close tags", partialRSSHead + `<item><title>Three</title></item>`, "Cut", []string{"One", "Two", "Three"}, "unexpected EOF"},
		{"eof before the first item", `<rss version="2.0"><channel><title>Cut</title><item><tit`, "Cut", nil, "unexpected EOF"},
		{"atom eof inside an entry", `<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<entry><id>1</id><title>One</title></entry><entry><id>2</id><title>Tw`, "A", []string{"One"}, "unexpected EOF"},
		{"rdf eof after an item", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="x"><title>R</title></channel><item rdf:about="1"><title>One</title></item><item rdf:about="2"`, "R", []string{"One"}, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, info, err := parse([]byte(tt.doc), "application/rss+xml", defaultMaxBody())
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if info.Partial == nil || !strings.Contains(info.Partial.Error(), tt.wantCause) {
				t.Errorf("Partial = %v, want an error containing %q", info.Partial, tt.wantCause)
			}
			var got []string
			for _, it := range feed.Items {
				got = append(got, it.Title)
			}
			if feed.Title != tt.wantTitle {
				t.Errorf("feed title = %q, want %q", feed.Title, tt.wantTitle)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("items (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseWholeDocumentIsNotPartial(t *testing.T) {
	t.Parallel()
	_, info, err := parse([]byte(partialRSSHead+`</channel></rss>`), "", defaultMaxBody())
	if err != nil || info.Partial != nil {
		t.Fatalf("parse = %v, partial %v; want a whole document", err, info.Partial)
	}
}

// TestPollerPartialDocument: a truncated 200 hands over the complete items,
// counts as partial with a log line, and keeps no validators, so the next
// poll is unconditional and gets the whole document.
func TestPollerPartialDocument(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/rss+xml")
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if n == 1 {
			_, _ = w.Write([]byte(partialRSSHead + `<item><title>Three</ti`))
			return
		}
		_, _ = w.Write([]byte(partialRSSHead + `<item><title>Three</title></item></channel></rss>`))
	})
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})

	r := pollOne(t, p)
	if r.Class != ClassPartial || r.Err != nil || r.Result == nil || r.Result.Partial == "" {
		t.Fatalf("first poll: %+v", r)
	}
	if v := h.store["a"]; v != (Validators{}) {
		t.Errorf("validators handed over after a partial document: %+v, want none", v)
	}
	if !strings.Contains(p.logs.String(), "feed document is incomplete") || !strings.Contains(p.logs.String(), "items=2") {
		t.Errorf("no partial log line with the item count; logs:\n%s", p.logs.String())
	}
	if got := testutil.ToFloat64(p.metrics.polls.WithLabelValues("a", ClassPartial)); got != 1 {
		t.Errorf("polls_total{partial} = %v, want 1", got)
	}
	st := p.status(t, "a")
	if st.Failures != 0 || st.ItemsHandled != 2 {
		t.Errorf("status after partial = %+v, want no failure and 2 items", st)
	}

	if r := pollOne(t, p); r.Class != ClassOK || r.Err != nil {
		t.Fatalf("second poll: %+v", r)
	}
	if r := pollOne(t, p); r.Class != ClassNotModified {
		t.Fatalf("third poll: %+v", r)
	}
	if d := cmp.Diff([]string{"", "", `"v1"`}, srv.sent("/a")); d != "" {
		t.Errorf("If-None-Match sent (-want +got):\n%s", d)
	}
}
