package transform

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"
)

// loadTestFeed parses a real feed copied into testdata (see SOURCES.tsv).
func loadTestFeed(t testing.TB, path string) *gofeed.Feed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gofeed.NewParser().Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// TestRealWorldCleanup maps captured feeds full of feed-service furniture
// (FeedBurner flares and pixels, Feedsportal ads and redirects, WordPress
// share buttons, a Pheedo ad item) and checks none of it survives.
func TestRealWorldCleanup(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "real", nil)
	files, _ := filepath.Glob(filepath.Join("testdata", "feeds", "*.*"))
	bench, _ := filepath.Glob(filepath.Join("testdata", "bench", "*.*"))
	files = append(files, bench...)
	mapped := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".tsv") {
			continue
		}
		for i, r := range m.Map(loadTestFeed(t, file), testNow) {
			checkResult(t, file, i, r)
			p := r.Payload
			if p == nil {
				continue
			}
			mapped++
			for _, junk := range []string{"feedflare", "feedsportal", "/~ff/", "/~r/", "/~a/", "feeds.wordpress.com", "pheedo", `width="1"`, `height="1"`} {
				if strings.Contains(p.Body, junk) || strings.Contains(p.ExternalURL, junk) || strings.Contains(p.ImageURL, junk) {
					t.Errorf("%s item %d: %q survived in %+v", file, i, junk, p)
				}
			}
		}
	}
	if mapped < 50 {
		t.Errorf("only %d items mapped from %d files", mapped, len(files))
	}

	golem := m.Map(loadTestFeed(t, filepath.Join("testdata", "feeds", "slymarbo-rss__rss_1_0.xml")), testNow)
	p := mustPayload(t, golem[0])
	// The Feedsportal redirect gives way to the GUID, the article's address.
	if want := "http://www.golem.de/news/adobes-cff-engine-bessere-schriftdarstellung-fuer-android-ios-und-linux-1305-99096-rss.html"; p.ExternalURL != want {
		t.Errorf("golem link: got %q, want %q", p.ExternalURL, want)
	}

	wapo := loadTestFeed(t, filepath.Join("testdata", "feeds", "node-feedparser__wapowellness.xml"))
	ads := 0
	for i, r := range m.Map(wapo, testNow) {
		if isAd := wapo.Items[i].Title == "Featured Advertiser"; isAd != strings.HasPrefix(r.Skip, "ad:") {
			t.Errorf("item %d %q: got skip %q", i, wapo.Items[i].Title, r.Skip)
		} else if isAd {
			ads++
		}
	}
	if ads != 3 {
		t.Errorf("Pheedo ad items skipped: %d, want 3", ads)
	}

	base := m.Map(loadTestFeed(t, filepath.Join("testdata", "feeds", "feed-rs__atom_xml_base.xml")), testNow)
	if p := mustPayload(t, base[0]); p.ImageURL != "https://numi.st/post/2022/travel-uke/IMG_1232.jpeg" || !strings.Contains(p.Body, p.ImageURL) {
		t.Errorf("xml:base: image %q body %q", p.ImageURL, p.Body)
	}
}
