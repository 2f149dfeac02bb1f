package transform

import (
	"strings"
	"testing"

	"github.com/feedworker/feedworker/config"
)

func TestFullTextDecision(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A whole paragraph of the story. ", 20) // 640 characters
	tests := []struct {
		name, mode string
		minChars   *int
		item       string
		want       bool
	}{
		{"never", "never", nil, `<item><title>t</title><link>https://e.org/1</link><description>short</description></item>`, false},
		{"always, long content", "always", nil, `<item><title>t</title><link>https://e.org/1</link><description>` + long + `</description></item>`, true},
		{"always, no link", "always", nil, `<item><title>t</title><description>short</description></item>`, false},
		{"auto, no content", "auto", nil, `<item><title>t</title><link>https://e.org/1</link></item>`, true},
		{"auto, short", "auto", nil, `<item><title>t</title><link>https://e.org/1</link><description>One line.</description></item>`, true},
		{"auto, long", "auto", nil, `<item><title>t</title><link>https://e.org/1</link><description>` + long + `</description></item>`, false},
		{"auto, long, ellipsis", "auto", nil, `<item><title>t</title><link>https://e.org/1</link><description>` + long + `and then…</description></item>`, true},
		{"auto, long, [...]", "auto", nil, `<item><title>t</title><link>https://e.org/1</link><description>` + long + ` [...]</description></item>`, true},
		{"auto, long, read more link", "auto", nil, `<item><title>t</title><link>https://e.org/1</link><description><![CDATA[<p>` + long + `</p><p><a href="https://e.org/1">Read more</a></p>]]></description></item>`, true},
		{"auto, lower minimum", "auto", ptr(5), `<item><title>t</title><link>https://e.org/1</link><description>One line.</description></item>`, false},
		{"auto, minimum counts characters not bytes", "auto", ptr(9), `<item><title>t</title><link>https://e.org/1</link><description>Ünïcödé!!</description></item>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mustCompile(t, "f", func(c *config.Mapping) {
				c.FullText, c.FullTextMinChars = ptr(tt.mode), tt.minChars
			})
			r := mapOne(t, m, tt.item)
			mustPayload(t, r)
			if r.NeedsFullText != tt.want {
				t.Errorf("NeedsFullText = %v, want %v", r.NeedsFullText, tt.want)
			}
		})
	}
}

func TestResolveFullText(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", func(c *config.Mapping) { c.FullText = ptr("always") })
	item := `<item><title>Title</title><link>https://news.example/a/1.html</link><description>One-line summary.</description></item>`
	article := `<div><h2>Sub</h2><p>First <a href="/b/2">paragraph</a>.</p><script>alert(1)</script>
<img src="pics/p.jpg" width="640" height="400"><img src="https://t.example/pixel.gif" width="1" height="1">
<p onclick="x()" style="color:red">Second.</p><iframe src="https://ads.example/"></iframe></div>`

	r := mapOne(t, m, item)
	before := mustPayload(t, r).Hash
	r.ResolveFullText(article, "https://news.example/a/1.html?ref=feed")
	p := r.Payload
	if r.NeedsFullText {
		t.Error("NeedsFullText still set")
	}
	for _, want := range []string{`<a href="https://news.example/b/2"`, `<img src="https://news.example/a/pics/p.jpg"`, "<p>Second.</p>", "<h2>Sub</h2>"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("body lacks %s:\n%s", want, p.Body)
		}
	}
	for _, bad := range []string{"script", "alert", "pixel.gif", "onclick", "style", "iframe"} {
		if strings.Contains(p.Body, bad) {
			t.Errorf("body holds %s:\n%s", bad, p.Body)
		}
	}
	if p.Summary != "One-line summary." {
		t.Errorf("summary = %q, want the feed's", p.Summary)
	}
	if p.ImageURL != "https://news.example/a/pics/p.jpg" {
		t.Errorf("image = %q, want the article's picture", p.ImageURL)
	}
	if p.Hash == before || p.Hash != p.computeHash() {
		t.Error("hash not recomputed for the new body")
	}

	// A failed fetch ("") or an article that sanitizes to nothing keeps the
	// feed's text.
	for _, html := range []string{"", "<script>x()</script>", "   "} {
		r := mapOne(t, m, item)
		feedBody := r.Payload.Body
		r.ResolveFullText(html, "https://news.example/a/1.html")
		if r.Payload.Body != feedBody || r.NeedsFullText {
			t.Errorf("ResolveFullText(%q): body %q, want the feed's %q", html, r.Payload.Body, feedBody)
		}
	}
}

func TestFullTextCompileErrors(t *testing.T) {
	t.Parallel()
	_, err := Compile("f", config.Mapping{FullText: ptr("sometimes"), FullTextMinChars: ptr(-1), FullTextSelector: ptr("div[")})
	if err == nil {
		t.Fatal("Compile accepted a bad full-text setup")
	}
	for _, want := range []string{"full_text:", "full_text_min_chars:", "full_text_selector:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
