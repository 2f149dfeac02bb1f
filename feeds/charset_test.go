package feeds

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// TestSniffLegacyCharsets parses documents in legacy charsets that declare
// nothing, served without an HTTP charset: the detector must find the
// charset and the text must read right.
func TestSniffLegacyCharsets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, wantCharset, wantText string
	}{
		{"feedparser-py__koi8r.xml", "koi8-r", "Как пережить новогоднюю ночь"},
		{"feedparser-py__shiftjis.xml", "shift_jis", "DrecomRSSに記事投稿が反映されない…"},
		{"feedparser-py__euckr.xml", "euc-kr", "EUC-KR 에서 TypeKey 한글닉네임 표시하기"},
		{"feedparser-py__eucjp.xml", "euc-jp", "ゲーム三昧な正月"},
		{"feedparser-py__tis620.xml", "windows-874", "สำนักงานส่งเสริมอุตสาหกรรมซอฟต์แวร์แห่งชาติ"},
		{"feedparser-py__chardet-big5.xml", "big5", "我希望"},
		{"miniflux__no_encoding_ISO-8859-1.xml", "windows-1252", "nombre d'études"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			feed, info, err := parse(readTestdata(t, tt.file), "", defaultMaxBody())
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if info.Sniffed == nil || info.Sniffed.Charset != tt.wantCharset {
				t.Errorf("sniffed %v, want %s", info.Sniffed, tt.wantCharset)
			}
			text := feed.Title
			for _, it := range feed.Items {
				text += "\n" + it.Title + "\n" + it.Description
			}
			if !strings.Contains(text, tt.wantText) {
				t.Errorf("text does not contain %q:\n%.300s", tt.wantText, text)
			}
			if bad := misdecoded(text); bad != "" {
				t.Errorf("text is mis-decoded (%s)", bad)
			}
		})
	}
}

// TestSniffOnlyWhenNeeded: declared, header-given and valid UTF-8 documents
// are never guessed at.
func TestSniffOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	cyr := "Как пережить новогоднюю ночь, единственное во что можно верить"
	tests := []struct {
		name        string
		body        []byte
		contentType string
		sniff       bool
	}{
		{"utf-8", []byte(rssWithTitle("", cyr)), "", false},
		{"declared", encodeLegacy(t, "windows-1251", rssWithTitle(`<?xml version="1.0" encoding="windows-1251"?>`, cyr)), "", false},
		{"header", encodeLegacy(t, "windows-1251", rssWithTitle("", cyr)), "text/xml; charset=windows-1251", false},
		{"undeclared", encodeLegacy(t, "windows-1251", rssWithTitle("", cyr)), "text/xml", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, info, err := parse(tt.body, tt.contentType, defaultMaxBody())
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if (info.Sniffed != nil) != tt.sniff {
				t.Errorf("sniffed = %v, want sniffing %v", info.Sniffed, tt.sniff)
			}
			if feed.Title != cyr {
				t.Errorf("title = %q, want %q", feed.Title, cyr)
			}
		})
	}
}

func TestFixMojibake(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"It’s fine", "It’s fine"},
		{"Itâ€™s broken", "It’s broken"},
		{"cafÃ© crÃ¨me", "café crème"},
		{"â€œquotedâ€\u009d", "“quoted”"},
		{"dots â€¦", "dots …"},
		{"2023Â  – Review", "2023\u00a0 – Review"},
		{"ÐŸÑ€Ð¸Ð²ÐµÑ‚", "Привет"},
		{"Ã‰tÃ©", "Été"},
		// Right text with the same characters stays as it is.
		{"Ça coûte 5 €, â la carte", "Ça coûte 5 €, â la carte"},
		{"ÂME", "ÂME"},
		{"Ö and é", "Ö and é"},
		{"10\u00a0×\u00a010 cm", "10\u00a0×\u00a010 cm"},
		{"« doué\u00a0», à\u00a0», ï\u00a0¿", "« doué\u00a0», à\u00a0», ï\u00a0¿"},
		{"InÂ August, Ã\u00a0 la carte", "In\u00a0August, à la carte"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := fixMojibake(tt.in); got != tt.want {
			t.Errorf("fixMojibake(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDoubleEncodedFeed(t *testing.T) {
	t.Parallel()
	feed, err := Parse(readTestdata(t, "feedparser-py__double-encoded-html.xml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := feed.Items[0].Description; got != "…" {
		t.Errorf("description = %q, want %q", got, "…")
	}
}

// TestPollerLogsCharsetGuess: a poll of an undeclared legacy-charset feed
// logs the charset the detector chose.
func TestPollerLogsCharsetGuess(t *testing.T) {
	t.Parallel()
	body := readTestdata(t, "feedparser-py__koi8r.xml")
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write(body)
	})
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("k", srv.URL+"/k", time.Hour)})
	r := pollOne(t, p)
	if r.Class != ClassOK || r.Result == nil || !strings.HasPrefix(r.Result.Sniffed, "koi8-r") {
		t.Fatalf("poll: %+v", r)
	}
	logs := p.logs.String()
	if !strings.Contains(logs, "warning=charset_guessed") || !strings.Contains(logs, "decoded as koi8-r (detected KOI8-R") {
		t.Errorf("no log line with the guess; logs:\n%s", logs)
	}
}

// FuzzMaybeMojibake holds the byte search to the test it replaced: a
// decoded character from U+00C2 to U+00F4.
func FuzzMaybeMojibake(f *testing.F) {
	for _, s := range []string{"", "plain", "Ã©", "Ã", "\xc3", "\xe3\xc3\x82", "Ã\x82", "é", "ô", "õ", "Â", "Á", "\xc3\xc3\xb4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for _, r := range s {
			if r >= 0xC2 && r <= 0xF4 {
				want = true
				break
			}
		}
		if got := maybeMojibake(s); got != want {
			t.Errorf("maybeMojibake(%q) = %v, want %v", s, got, want)
		}
	})
}
