package publish

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// TestPrintsUnchanged checks digest and bandPrint against the formulas
// they replace: stored aliases must keep matching.
func TestPrintsUnchanged(t *testing.T) {
	old := func(kind byte, s string) string {
		sum := sha256.Sum256([]byte(s))
		return string(kind) + ":" + base64.RawURLEncoding.EncodeToString(sum[:12])
	}
	for _, s := range []string{"", "example.com/a", "https://example.org/a/very/long/path/beyond/thirty/two/bytes?q=1"} {
		if got, want := digest('u', s), old('u', s); got != want {
			t.Errorf("digest(%q) = %s, want %s", s, got, want)
		}
	}
	for _, bits := range []uint64{0, 1, 0xf, 0x10, 0xab, 0x100, 0xfff, 0x1000, 0xbeef, 0xffff} {
		for band := range simBands {
			want := old('b', fmt.Sprintf("%s|%d|%04x", "2026-01-02", band, bits))
			if got := bandPrint("2026-01-02", band, bits); got != want {
				t.Errorf("bandPrint(%d, %#x) = %s, want %s", band, bits, got, want)
			}
		}
	}
}

// TestPrintsOfUnchanged checks printsOf, which writes an item's
// fingerprints into one buffer, against digest and bandPrint one by one.
func TestPrintsOfUnchanged(t *testing.T) {
	body := strings.Repeat("<p>Council approves the budget for roads and schools after a long debate.</p> ", 8)
	day := time.Date(2026, 1, 2, 23, 30, 0, 0, time.FixedZone("x", -3600))
	for _, pl := range []transform.Payload{
		{Title: "A", ExternalURL: "https://www.example.com/a/", GUID: "https://example.com/a", PublishDate: day, Body: body},
		{Title: "B", ExternalURL: "https://example.com/b", GUID: "tag:example.com,2026:b", PublishDate: day, Body: body},
		{Title: "C", GUID: "https://example.com/c?utm_source=x", Body: body},
		{Title: "D", PublishDate: day, Body: "short"},
		{Title: "E", PublishDate: day, Body: body},
		{Title: "F"},
		{Title: "G", ExternalURL: "https://example.com/g?utm_source=x", GUID: "https://example.com/g?utm_source=x", PublishDate: day, Body: body},
		{Title: "H", ExternalURL: "urn:x:1", GUID: "urn:x:1"},
	} {
		var want itemPrints
		add := func(fp string) {
			if !slices.Contains(want.urls, fp) {
				want.urls = append(want.urls, fp)
			}
		}
		if a := transform.AliasURL(pl.ExternalURL); a != "" {
			add(digest('u', a))
		}
		if pl.GUID != "" {
			if a := transform.AliasURL(pl.GUID); a != "" {
				add(digest('u', a))
			} else {
				add(digest('g', transform.AliasGUID(pl.GUID)))
			}
		}
		want.title = transform.TitleKey(pl.Title)
		if sim, ok := transform.BodySimHash(pl.Body); ok && !pl.PublishDate.IsZero() {
			want.sim = sim
			for b := range simBands {
				want.bands = append(want.bands, bandPrint(pl.PublishDate.UTC().Format(time.DateOnly), b, (sim>>(16*b))&0xffff))
			}
		}
		got := printsOf(&pl, true)
		if !slices.Equal(got.urls, want.urls) || !slices.Equal(got.bands, want.bands) || got.sim != want.sim || got.title != want.title {
			t.Errorf("printsOf(%s) = %+v, want %+v", pl.Title, got, want)
		}
		if got := printsOf(&pl, false); len(got.bands) != 0 || got.sim != 0 || !slices.Equal(got.urls, want.urls) {
			t.Errorf("printsOf(%s, no text) = %+v", pl.Title, got)
		}
	}
}

// TestAliasesOfSized checks that aliasesOf counts the aliases it makes
// exactly (its slice is sized by a loop of its own), for fetches with
// matches in and out of the feed, shared and reserved fingerprints.
func TestAliasesOfSized(t *testing.T) {
	body := strings.Repeat("<p>Council approves the budget for roads and schools after a long debate.</p> ", 8)
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	var kept []*transform.Payload
	for i := range 6 {
		kept = append(kept, &transform.Payload{Type: transform.TypeStory, ExternalID: fmt.Sprint("e", i), Title: fmt.Sprint("Title ", i),
			ExternalURL: fmt.Sprint("https://example.com/", i), GUID: fmt.Sprint("tag:", i), PublishDate: day, Body: body + fmt.Sprint(i)})
	}
	kept[5].ExternalURL = kept[4].ExternalURL // shared within the fetch
	status := []dedupe.Status{dedupe.StatusNew, dedupe.StatusNew, dedupe.StatusChanged, dedupe.StatusNew, dedupe.StatusUnchanged, dedupe.StatusNew}
	plan := &repostPlan{prints: make([]itemPrints, len(kept)), matches: map[int]repostMatch{
		1: {by: MatchURL, target: dedupe.Key{FeedID: "f", ExternalID: "old"}, rec: dedupe.Record{Type: transform.TypeStory}},
		3: {by: MatchAcross, target: dedupe.Key{FeedID: "g", ExternalID: "x"}, rec: dedupe.Record{Type: transform.TypeStory}},
	}, shared: map[string]bool{}, reserved: map[string]bool{}}
	for i, pl := range kept {
		plan.prints[i] = printsOf(pl, true)
	}
	plan.shared[plan.prints[4].urls[0]] = true
	plan.reserved[plan.prints[0].urls[0]] = true
	plan.reserved[plan.prints[3].urls[1]] = true
	for _, o := range []RepostOptions{{URL: true, Text: true, AcrossFeeds: true, Window: time.Hour}, {URL: true}, {Text: true}, {URL: true, AcrossFeeds: true}} {
		out := aliasesOf("f", kept, status, plan, o)
		if len(out) == 0 || len(out) != cap(out) {
			t.Errorf("%+v: %d aliases in a slice of %d", o, len(out), cap(out))
		}
	}
}

// digest and bandPrint are the fingerprints one at a time, as printsOf
// wrote them before it cut them out of one buffer: the references the
// tests hold it to.
func digest(kind byte, s string) string {
	var out [printLen]byte
	return string(appendDigest(out[:0], kind, []byte(s)))
}

func bandPrint(day string, band int, bits uint64) string {
	var out [printLen]byte
	return string(appendBandPrint(out[:0], []byte(day), band, bits))
}
