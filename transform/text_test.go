package transform

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// collapseSpaceByRune is collapseSpace as it was before its copy of ASCII
// runs and its collapsed-already answer: one character at a time.
func collapseSpaceByRune(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
				space = b.Len() > 0
			case c < 0x20 || c == 0x7f:
			default:
				if space {
					b.WriteByte(' ')
					space = false
				}
				b.WriteByte(c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff' || r == '\u00ad':
			continue
		case unicode.IsControl(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteString(s[i-size : i])
	}
	return b.String()
}

// nodeTextJoined is nodeText as it was before it collapsed as it wrote:
// the text joined, then collapsed.
func nodeTextJoined(c *content) string {
	var b strings.Builder
	joinText(&b, c.root)
	return collapseSpaceByRune(b.String())
}

func TestCollapseSpaceCases(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", " ", "a", " a ", "a b", "a  b", "a\tb", "a\n\nb\r\n", "\x00a\x01 b\x7f", "a \x00 b", "a\x00 \x00b",
		"ab ", " ab", "\u00a0a\u00a0", "a\u200bb", "é  ü", "a\xffb", "a \xe2\x80 b", "\xc3", "x\u2028y", "tab\there",
		"Item 3 of feed 5: alpha beta", "a\u0085b", "ﬁ ligature", "日本語　テキスト",
		"a b c  d", "a b\tc", "a b ", "a b\u00a0c", "a b\x00c", "a b\x7fc", "a b\n", "a b é", "a b  ",
	} {
		if got, want := collapseSpace(s), collapseSpaceByRune(s); got != want {
			t.Errorf("collapseSpace(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestNodeTextCases checks nodeText against the joined text collapsed,
// with text nodes that are not valid UTF-8 among them (a rune's bytes
// split by an element: only joining makes it one).
func TestNodeTextCases(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://example.org/")
	for _, src := range []string{
		`<p>a</p><p>b</p>`, `<p> a <b>b</b>c </p><br>d`, `x<script>y</script>z`, `<div><p></p></div>`,
		"a\xc3<b>\xa9</b>", "<p>\xe2\x80</p>\x8b", "<i>\xff</i> b", `<img src="/a.png" alt="x">t`,
		"plain\n\ntext with  spaces", `<table><tr><td>1</td><td>2</td></tr></table>`,
	} {
		c := parseContent(src, base)
		if got, want := c.text(), nodeTextJoined(c); got != want {
			t.Errorf("%q: text %q, want %q", src, got, want)
		}
	}
}

// TestTextCorpus compares collapseSpace and nodeText with the code they
// replaced on every item of the corpus: titles, descriptions and content.
func TestTextCorpus(t *testing.T) {
	var texts, trees int
	for name, feed := range corpusFeeds(t) {
		for i, it := range feed.Items {
			for _, s := range []string{it.Title, it.Description, it.Content} {
				texts++
				if got, want := collapseSpace(s), collapseSpaceByRune(s); got != want {
					t.Errorf("%s item %d: collapseSpace differs\n got %q\nwant %q", name, i, got, want)
				}
			}
			base, _ := url.Parse(it.Link)
			for _, src := range []string{it.Content, it.Description} {
				if strings.TrimSpace(src) == "" {
					continue
				}
				trees++
				c := parseContent(src, base)
				if got, want := c.text(), nodeTextJoined(c); got != want {
					t.Errorf("%s item %d: nodeText differs\n got %q\nwant %q", name, i, got, want)
				}
			}
		}
	}
	t.Logf("%d texts, %d trees", texts, trees)
}

// FuzzNodeText compares nodeText and collapseSpace with the code they
// replaced on arbitrary fragments.
func FuzzNodeText(f *testing.F) {
	for _, s := range []string{"<p>a</p> b\u00a0c", "a\xc3<b>\xa9</b>", "x \t\r\n y\u200b"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.org/")
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := collapseSpace(in), collapseSpaceByRune(in); got != want {
			t.Errorf("collapseSpace(%q) = %q, want %q", in, got, want)
		}
		c := parseContent(in, base)
		if got, want := c.text(), nodeTextJoined(c); got != want {
			t.Errorf("%q: text %q, want %q", in, got, want)
		}
	})
}
