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
