package publish

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/transform"
)

// corpusFeeds finds the feed corpus as transform's golden test does:
// $FEEDWORKER_CORPUS, else ../shared/corpus next to the repository.
func corpusFeeds(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FEEDWORKER_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus")
	}
	if !filepath.IsAbs(dir) {
		root, _ := filepath.Abs("..")
		dir = filepath.Join(root, dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "feeds")); err == nil && fi.IsDir() {
		dir = filepath.Join(dir, "feeds")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("feed corpus not found at %s (set FEEDWORKER_CORPUS)", dir)
	}
	return dir
}

// TestCorpusReposts sweeps the corpus: within one fetch no item may match
// another (by any fingerprint the matchers would use), and it prints the
// aliases each matcher produces, the SimHash distances of same-day pairs
// (the threshold's evidence), and how many items a simulated https move
// and platform migration would match.
func TestCorpusReposts(t *testing.T) {
	dir := corpusFeeds(t)
	m, err := transform.Compile("corpus", config.Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var files, items, urlAliases, textAliases, sharedURL, sharedText, withText int
	var movedURL, migratedText, migratable int
	var distHist [65]int
	// Across feeds: every file is taken for a feed of its own, read in
	// name order; an item whose unshared url fingerprint an earlier file's
	// item holds would be a repost of it when the titles agree too.
	type holder struct {
		file, title, shown string
	}
	across := map[string]holder{}
	var acrossMatched, acrossBlocked int
	var acrossExamples, acrossInexact []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		feed, err := feeds.Parse(data, "")
		if err != nil {
			continue
		}
		files++
		var kept []*transform.Payload
		for _, r := range m.Map(feed, now) {
			if r.Payload != nil && r.Skip == "" && r.Err == nil {
				kept = append(kept, r.Payload)
			}
		}
		items += len(kept)
		prints := make([]itemPrints, len(kept))
		count := map[string]int{}
		for i, pl := range kept {
			prints[i] = printsOf(pl, true)
			for _, fp := range append(append([]string{}, prints[i].urls...), prints[i].bands...) {
				count[fp]++
			}
		}
		for i, ip := range prints {
			for _, fp := range ip.urls {
				if count[fp] > 1 {
					sharedURL++
				} else {
					urlAliases++
				}
			}
			if len(ip.bands) > 0 {
				withText++
			}
			for _, fp := range ip.bands {
				if count[fp] > 1 {
					sharedText++
				} else {
					textAliases++
				}
			}
			var firstOf *holder
			for _, fp := range ip.urls {
				if count[fp] > 1 {
					continue
				}
				if h, ok := across[fp]; ok && h.file != e.Name() && firstOf == nil {
					firstOf = &h
				} else if !ok {
					across[fp] = holder{file: e.Name(), title: ip.title, shown: kept[i].Title}
				}
			}
			if firstOf != nil {
				if transform.TitleSimilar(firstOf.title, ip.title) {
					acrossMatched++
					if firstOf.title != ip.title {
						// Similar, not equal: the ones to look at by eye.
						acrossInexact = append(acrossInexact, fmt.Sprintf("%s %q = %s %q", e.Name(), kept[i].Title, firstOf.file, firstOf.shown))
					}
					if len(acrossExamples) < 3 {
						acrossExamples = append(acrossExamples, fmt.Sprintf("%s %q = %s %q", e.Name(), kept[i].Title, firstOf.file, firstOf.shown))
					}
				} else {
					acrossBlocked++
				}
			}
			// Pairs of one fetch: the text matcher's full test.
			for j := i + 1; j < len(prints); j++ {
				jp := prints[j]
				if len(ip.bands) == 0 || len(jp.bands) == 0 || !sameDay(kept[i], kept[j]) {
					continue
				}
				d := transform.SimHashDistance(ip.sim, jp.sim)
				distHist[d]++
				if d <= MaxSimHashDistance && transform.TitleSimilar(ip.title, jp.title) && shareUnshared(ip.bands, jp.bands, count) {
					t.Errorf("%s: items %d and %d of one fetch would match by text (%q, %q)", e.Name(), i, j, kept[i].Title, kept[j].Title)
				}
			}
			// A site moving to https under www: the url matcher's recall.
			moved := *kept[i]
			moved.ExternalURL = movedURLOf(moved.ExternalURL)
			moved.GUID = movedURLOf(moved.GUID)
			for _, fp := range printsOf(&moved, false).urls {
				if count[fp] == 1 && contains(ip.urls, fp) {
					movedURL++
					break
				}
			}
			// A platform migration keeps only title, day and text.
			if len(ip.bands) > 0 {
				migratable++
				mig := *kept[i]
				mig.ExternalURL, mig.GUID = "https://new.example/p/1", "new-1"
				mp := printsOf(&mig, true)
				if transform.SimHashDistance(mp.sim, ip.sim) <= MaxSimHashDistance && transform.TitleSimilar(mp.title, ip.title) && shareUnshared(mp.bands, ip.bands, count) {
					migratedText++
				}
			}
		}
	}
	t.Logf("corpus: %d fetches, %d items; url aliases %d (%d fingerprints shared within a fetch, unused); text aliases %d for %d items with a date and a body of %d+ words (%d shared, unused)",
		files, items, urlAliases, sharedURL, textAliases, withText, transform.MinSimHashWords, sharedText)
	t.Logf("same-day pairs of one fetch by SimHash distance: <=3: %d, 4-6: %d, 7-10: %d, >10: %d",
		sum(distHist[:4]), sum(distHist[4:7]), sum(distHist[7:11]), sum(distHist[11:]))
	t.Logf("simulated https+www move: %d of %d items matched by url; simulated platform migration: %d of %d text-eligible items matched by text",
		movedURL, items, migratedText, migratable)
	t.Logf("across feeds (each file a feed): %d items would be reposts of an earlier file's item (same url fingerprint, similar title), %d sharing a url fingerprint kept apart by their titles; e.g. %v",
		acrossMatched, acrossBlocked, acrossExamples)
	t.Logf("across feeds, matched with titles similar but not equal: %d %v", len(acrossInexact), acrossInexact)
}

func sameDay(a, b *transform.Payload) bool {
	return !a.PublishDate.IsZero() && a.PublishDate.UTC().Format(time.DateOnly) == b.PublishDate.UTC().Format(time.DateOnly)
}

func shareUnshared(a, b []string, count map[string]int) bool {
	for _, x := range a {
		if count[x] == 1 && contains(b, x) {
			return true
		}
	}
	return false
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func sum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

func movedURLOf(u string) string {
	if rest, ok := strings.CutPrefix(u, "http://"); ok {
		return "https://www." + strings.TrimPrefix(rest, "www.")
	}
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		return "http://" + strings.TrimPrefix(rest, "www.")
	}
	return u
}
