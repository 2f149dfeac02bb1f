package transform

import (
	"strings"
	"testing"
	"time"
)

func TestAliasURL(t *testing.T) {
	same := [][]string{
		{"http://example.com/2024/05/story/", "https://www.example.com/2024/05/story", "https://EXAMPLE.com:443/2024/05/story/index.html#comments",
			"https://example.com/2024/05/story/?utm_source=rss&utm_medium=feed", "https://m.example.com/2024/05/story", "https://example.com/2024/05/story/amp/",
			"https://example.com/amp/2024/05/story", "http://example.com:80/2024/05/story?amp=1"},
		{"https://example.com/?p=12&b=2", "http://www.example.com/?b=2&p=12"},
	}
	for _, group := range same {
		want := AliasURL(group[0])
		if want == "" {
			t.Fatalf("AliasURL(%q) is empty", group[0])
		}
		for _, u := range group[1:] {
			if got := AliasURL(u); got != want {
				t.Errorf("AliasURL(%q) = %q, want %q (as %q)", u, got, want, group[0])
			}
		}
	}
	differ := [][2]string{
		{"https://example.com/2024/05/story", "https://example.com/2024/05/other"},
		{"https://example.com/?p=12", "https://example.com/?p=13"},
		{"https://example.com/a", "https://example.org/a"},
		{"https://www.com/a", "https://com/a"},
		{"https://example.com:8080/a", "https://example.com/a"},
	}
	for _, d := range differ {
		if a, b := AliasURL(d[0]), AliasURL(d[1]); a == b {
			t.Errorf("AliasURL(%q) = AliasURL(%q) = %q, want them apart", d[0], d[1], a)
		}
	}
	for _, bad := range []string{"", "not a url", "mailto:a@b.c", "/relative"} {
		if got := AliasURL(bad); got != "" {
			t.Errorf("AliasURL(%q) = %q, want empty", bad, got)
		}
	}
}

func TestAliasGUID(t *testing.T) {
	if a, b := AliasGUID("http://site.example/?p=5"), AliasGUID(" https://www.site.example/?p=5 "); a != b || a == "" {
		t.Errorf("URL GUIDs: %q vs %q", a, b)
	}
	if got := AliasGUID(" tag:site,2024:5 "); got != "tag:site,2024:5" {
		t.Errorf("tag GUID: %q", got)
	}
	if AliasGUID("  ") != "" {
		t.Error("blank GUID has an alias")
	}
}

func TestTitleDay(t *testing.T) {
	d := time.Date(2024, 5, 1, 23, 30, 0, 0, time.UTC)
	if a, b := TitleDay("Hello, World!", d), TitleDay("hello world", d.Add(-time.Hour)); a != b || a == "" {
		t.Errorf("same title and day: %q vs %q", a, b)
	}
	if TitleDay("Weekly update", d) == TitleDay("Weekly update", d.AddDate(0, 0, 7)) {
		t.Error("same title on another day matches")
	}
	if TitleDay("Hello", time.Time{}) != "" || TitleDay(" ", d) != "" {
		t.Error("no date or no title still gives a fingerprint")
	}
}

func TestBodySimHash(t *testing.T) {
	base := strings.Repeat("the council met on tuesday to discuss the new library budget and agreed to extend opening hours ", 3)
	a, ok := BodySimHash("<p>" + base + "</p>")
	if !ok {
		t.Fatal("a long body has no SimHash")
	}
	b, _ := BodySimHash("<div>" + base + " Edited.</div>")
	if d := SimHashDistance(a, b); d > 3 {
		t.Errorf("near-identical bodies differ in %d bits", d)
	}
	c, _ := BodySimHash(strings.Repeat("a completely different text about football results and the weather this weekend in town ", 3))
	if d := SimHashDistance(a, c); d <= 10 {
		t.Errorf("unrelated bodies differ in only %d bits", d)
	}
	if _, ok := BodySimHash("<p>Listen to the episode.</p>"); ok {
		t.Error("a boilerplate body has a SimHash")
	}
}

func TestPayloadAs(t *testing.T) {
	p := Payload{Type: TypeStory, FeedID: "a", ExternalID: "x", Title: "T"}
	p.Hash = p.computeHash()
	q := p.As("b", "y")
	if q.FeedID != "b" || q.ExternalID != "y" || q.Hash == p.Hash || q.Hash != q.computeHash() {
		t.Errorf("As: %+v", q)
	}
	if r := q.As("a", "x"); r.Hash != p.Hash {
		t.Error("As back does not give the same hash")
	}
}

func TestTitleSimilar(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"Council approves budget", "Council approves 2025 budget", true},
		{"council approves budget", "council approves budget", true},
		{"Weekly update", "Photo of the day", false},
		{"Council approves budget", "Library opens new wing", false},
		{"", "x", false},
	} {
		if got := TitleSimilar(TitleKey(c.a), TitleKey(c.b)); got != c.want {
			t.Errorf("TitleSimilar(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
