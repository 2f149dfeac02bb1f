package feedfarm

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"
)

func TestFarmServesConditionalFeeds(t *testing.T) {
	farm := New(Options{Feeds: 3, Items: 5, Seed: 1, Gzip: true})
	srv := httptest.NewServer(farm)
	defer srv.Close()

	get := func(etag string, gz bool) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, URL(srv.URL, 1), nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := get("", true)
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	resp.Body.Close()
	feed, err := gofeed.NewParser().ParseString(string(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := len(feed.Items); got != 5 {
		t.Fatalf("items = %d, want 5", got)
	}
	if feed.Items[0].GUID != "urn:feedfarm:1:0" {
		t.Errorf("guid = %q", feed.Items[0].GUID)
	}
	etag := resp.Header.Get("ETag")

	if resp := get(etag, false); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("with the ETag: status %d, want 304", resp.StatusCode)
	}
	if farm.NotModified() != 1 || farm.Requests() != 2 {
		t.Errorf("counters: %d not modified of %d, want 1 of 2", farm.NotModified(), farm.Requests())
	}

	if n := farm.Edit(0.2); n != 3 {
		t.Errorf("Edit(0.2) changed %d items, want 1 per feed = 3", n)
	}
	resp = get(etag, false)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "(edit 1)") {
		t.Fatalf("after an edit: status %d, edited title present = %v", resp.StatusCode, strings.Contains(string(body), "(edit 1)"))
	}
	if farm.MaxConcurrentPolls() != 1 {
		t.Errorf("max concurrent polls = %d, want 1", farm.MaxConcurrentPolls())
	}
}

func TestFarmIsDeterministic(t *testing.T) {
	a, b := New(Options{Feeds: 2, Items: 3, Seed: 7}), New(Options{Feeds: 2, Items: 3, Seed: 7})
	if string(a.feeds[1].body) != string(b.feeds[1].body) {
		t.Fatal("same seed, different documents")
	}
	if c := New(Options{Feeds: 2, Items: 3, Seed: 8}); string(c.feeds[1].body) == string(a.feeds[1].body) {
		t.Fatal("different seeds, same document")
	}
}

func TestFarmChangeAddsAndEdits(t *testing.T) {
	farm := New(Options{Feeds: 10, Items: 4, Seed: 2})
	before := map[int]string{}
	for i := range 10 {
		before[i] = string(farm.Bytes(i))
	}
	guids := farm.GUIDs()
	added, edited := farm.Change(0.3, 1)
	if added != 3 || edited != 3 {
		t.Fatalf("Change(0.3) = %d added, %d edited; want 3 and 3", added, edited)
	}
	changed := 0
	for i := range 10 {
		after := string(farm.Bytes(i))
		if after == before[i] {
			continue
		}
		changed++
		feed, err := gofeed.NewParser().ParseString(after)
		if err != nil {
			t.Fatalf("feed %d: %v", i, err)
		}
		if len(feed.Items) != 4 {
			t.Errorf("feed %d serves %d items after a change, want still 4", i, len(feed.Items))
		}
		if want := guid(i, 4); feed.Items[0].GUID != want {
			t.Errorf("feed %d: newest item %q, want the added %q", i, feed.Items[0].GUID, want)
		}
		if !strings.Contains(feed.Items[1].Title, "(edit 1)") {
			t.Errorf("feed %d: the item below the new one is not edited: %q", i, feed.Items[1].Title)
		}
		// Items that were not edited keep their text: a poll sees them as
		// unchanged.
		if !strings.Contains(before[i], "<title>"+feed.Items[2].Title+"</title>") {
			t.Errorf("feed %d: an untouched item changed its text", i)
		}
	}
	if changed != 3 {
		t.Errorf("%d feeds changed, want 3", changed)
	}
	if got := len(farm.GUIDs()); got != len(guids) {
		t.Errorf("%d GUIDs served after a change, want still %d", got, len(guids))
	}
	// The same seed and round pick the same feeds.
	other := New(Options{Feeds: 10, Items: 4, Seed: 2})
	other.Change(0.3, 1)
	for i := range 10 {
		if string(other.Bytes(i)) != string(farm.Bytes(i)) {
			t.Fatalf("feed %d differs between two farms changed alike", i)
		}
	}
}
