package worker

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// TestHeldOnConsole: items the flood guard holds show on the console's
// dashboard and in /status.json, per feed, with how many, since when and
// the release command, and feedworker_items_held agrees; after release
// none are shown and the gauge has no series for the feed.
func TestHeldOnConsole(t *testing.T) {
	e := newEnv(t, 1, 1)
	w := newWorker(t, e.config(t, testSecret, ""), Options{})
	ctx := t.Context()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 9, 0, 0, 0, time.UTC) }
	item := func(id string, d int) transform.Payload {
		return transform.Payload{ExternalID: id, Hash: "h-" + id, Type: transform.TypeStory, Title: "Story " + id, PublishDate: day(d)}
	}
	o := publish.FeedOptions{InitialItems: 10, Reposts: publish.RepostOptions{FloodMax: 25}}
	fetch := []transform.Payload{item("newest", 20)}
	if _, err := w.pub.Accept(ctx, "farm-0", fetch, dedupe.Validators{}, o); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		fetch = append(fetch, item(fmt.Sprintf("old-%d", i), 1+i%19))
	}
	c, err := w.pub.Accept(ctx, "farm-0", fetch, dedupe.Validators{}, o)
	if err != nil || c.Held != 30 {
		t.Fatalf("flood: %+v, %v; want 30 held", c, err)
	}

	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	code, body := get(t, srv.Client(), srv.URL+"/status.json")
	var st struct {
		Held []HeldFeed `json:"held"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("GET /status.json = %d, %v", code, err)
	}
	if len(st.Held) != 1 || st.Held[0].FeedID != "farm-0" || st.Held[0].Count != 30 || st.Held[0].Since == nil ||
		st.Held[0].Release != "feedworker release --config CONFIG --feed farm-0 --all" {
		t.Errorf("/status.json held = %+v", st.Held)
	}
	want := "# HELP feedworker_items_held Items a feed's flood guard holds for feedworker release, by feed.\n# TYPE feedworker_items_held gauge\nfeedworker_items_held{feed=\"farm-0\"} 30\n"
	if err := testutil.GatherAndCompare(w.Registry(), strings.NewReader(want), "feedworker_items_held"); err != nil {
		t.Error(err)
	}
	_, page := get(t, srv.Client(), srv.URL+"/")
	for _, want := range []string{`<table id="held">`, "feedworker release --config CONFIG --feed farm-0 --all", "<td>30</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}

	if _, _, err := w.Release(ctx, "farm-0", publish.ReleaseDrop, time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, srv.Client(), srv.URL+"/status.json")
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Held) != 0 {
		t.Errorf("after release: held = %+v, %v", st.Held, err)
	}
	if _, page = get(t, srv.Client(), srv.URL+"/"); strings.Contains(page, `<table id="held">`) {
		t.Error("the dashboard still shows held items after release")
	}
	if n := testutil.CollectAndCount(w.Registry(), "feedworker_items_held"); n != 0 {
		t.Errorf("feedworker_items_held has %d series after release, want none", n)
	}
}
