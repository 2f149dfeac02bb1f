package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/worker"
)

// categoriesOf returns each content's category ids, by external id.
func categoriesOf(t *testing.T, e *repostEnv) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, it := range e.sb.AllContent() {
		var c struct {
			Categories []struct {
				ID int64 `json:"id"`
			} `json:"categories"`
		}
		if err := json.Unmarshal(it.JSON, &c); err != nil {
			t.Fatalf("content %d: %v", it.ID, err)
		}
		var ids []int64
		for _, r := range c.Categories {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		out[it.ExternalID] = ids
	}
	return out
}

func categoryYAML(name string) string {
	return fmt.Sprintf("    categories: [%s]\n    create_categories: true\n", name)
}

// TestRepostMergesCategories: the same story in a second feed is no second
// Content; its categories are added to the first feed's Content by one PUT
// each, once: a restart (every pass is a fresh worker) sends nothing more.
// On the embedded store and on Redis.
func TestRepostMergesCategories(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newRepostEnv(t, store == "redis")
			e.feedYAML = map[string]string{"a": categoryYAML("News"), "b": categoryYAML("Sport")}
			base := townNews()
			if posts, puts := e.pass("", map[string][]story{"a": base}); posts != 3 || puts != 0 {
				t.Fatalf("first pass: %d POSTs, %d PUTs, want 3 and 0", posts, puts)
			}
			// Feed b carries the same stories, its proxy rewriting the GUIDs.
			proxied := mapStories(base, func(i int, s story) story {
				s.guid = fmt.Sprintf("https://proxy.example/~r/town/~3/%d", i)
				return s
			})
			if posts, puts := e.pass("", map[string][]story{"a": base, "b": proxied}); posts != 0 || puts != 3 {
				t.Errorf("second feed: %d POSTs, %d PUTs, want 0 and 3 (categories merged)", posts, puts)
			}
			if n := len(e.sb.AllContent()); n != 3 {
				t.Errorf("the API holds %d items, want 3", n)
			}
			for ext, ids := range categoriesOf(t, e) {
				if len(ids) != 2 {
					t.Errorf("content %s has categories %v, want News and Sport", ext, ids)
				}
			}
			code, out, errOut := runCLI(t, "explain", "--config", filepath.Join(e.dir, "c.yaml"), "--feed", "b")
			if code != 0 || !strings.Contains(out, "its categories were added to it by a PUT") {
				t.Errorf("explain --feed b does not tell the merge: exit %d\n%s%s", code, out, errOut)
			}
			if posts, puts := e.pass("", map[string][]story{"a": base, "b": proxied}); posts != 0 || puts != 0 {
				t.Errorf("a restart: %d POSTs, %d PUTs, want none", posts, puts)
			}
			// Feed b edits its copies: they stay reposts, nothing is sent.
			edited := mapStories(proxied, func(_ int, s story) story {
				s.body += " Edited."
				return s
			})
			if posts, puts := e.pass("", map[string][]story{"a": base, "b": edited}); posts != 0 || puts != 0 {
				t.Errorf("feed b edits its reposts: %d POSTs, %d PUTs, want none", posts, puts)
			}
		})
	}
}

// TestRepostMergeOff: merge_categories: false leaves the first Content's
// categories alone, and still posts nothing for the second feed.
func TestRepostMergeOff(t *testing.T) {
	t.Parallel()
	e := newRepostEnv(t, false)
	e.feedYAML = map[string]string{"a": categoryYAML("News"), "b": categoryYAML("Sport") + "    reposts:\n      merge_categories: false\n"}
	base := townNews()
	e.pass("", map[string][]story{"a": base})
	if posts, puts := e.pass("", map[string][]story{"a": base, "b": base}); posts != 0 || puts != 0 {
		t.Errorf("second feed without merging: %d POSTs, %d PUTs, want none", posts, puts)
	}
	for ext, ids := range categoriesOf(t, e) {
		if len(ids) != 1 {
			t.Errorf("content %s has categories %v, want News only", ext, ids)
		}
	}
}

// TestRepostOtherTypeNeverMerges: a feed of links carrying a feed of
// stories' items posts them: content types never merge.
func TestRepostOtherTypeNeverMerges(t *testing.T) {
	t.Parallel()
	e := newRepostEnv(t, false)
	e.feedYAML = map[string]string{"b": "    type: link\n"}
	base := townNews()
	e.pass("", map[string][]story{"a": base})
	if posts, puts := e.pass("", map[string][]story{"a": base, "b": base}); posts != 3 || puts != 0 {
		t.Errorf("a links feed with the same items: %d POSTs, %d PUTs, want 3 and 0", posts, puts)
	}
}

// TestRepostRaceOnePass: two feeds that first see the same stories in one
// pass (polled concurrently) give one Content per story, with both feeds'
// categories, however the pass interleaves them; run many times, on both
// stores.
func TestRepostRaceOnePass(t *testing.T) {
	t.Parallel()
	runs := 12
	if testing.Short() {
		runs = 4
	}
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			for run := range runs {
				e := newRepostEnv(t, store == "redis")
				e.feedYAML = map[string]string{"a": categoryYAML("News"), "b": categoryYAML("Sport")}
				base := townNews()
				posts, puts := e.pass("", map[string][]story{"a": base, "b": base})
				if posts != 3 || puts > 3 {
					t.Errorf("run %d: %d POSTs, %d PUTs, want 3 POSTs and at most 3 PUTs", run, posts, puts)
				}
				byExt := map[string]int{}
				for _, it := range e.sb.AllContent() {
					byExt[it.ExternalID]++
				}
				if len(byExt) != 3 {
					t.Errorf("run %d: contents %v, want 3 stories once each", run, byExt)
				}
				for ext, n := range byExt {
					if n != 1 {
						t.Errorf("run %d: story %s is on the API %d times", run, ext, n)
					}
				}
				for ext, ids := range categoriesOf(t, e) {
					if len(ids) != 2 {
						t.Errorf("run %d: content %s has categories %v, want both feeds'", run, ext, ids)
					}
				}
				if posts, puts := e.pass("", map[string][]story{"a": base, "b": base}); posts != 0 || puts != 0 {
					t.Errorf("run %d: a restart: %d POSTs, %d PUTs, want none", run, posts, puts)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

// heldOnStatus is what a worker of cfg shows of held items: the status's
// rows and the feedworker_items_held gauge, by feed.
func heldOnStatus(t *testing.T, cfg string) ([]worker.HeldFeed, map[string]float64) {
	t.Helper()
	ctx := context.Background()
	fs := newFlags("status", io.Discard)
	c := commonFlags(fs)
	if err := fs.Parse([]string{"--config", cfg, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	w, _, err := c.worker(ctx, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st, err := w.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gauge := map[string]float64{}
	mfs, err := w.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "feedworker_items_held" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "feed" {
					gauge[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return st.Held, gauge
}

// checkHeld asserts the status and the gauge show n items held by feed a
// (none when n is 0), with the release command to run.
func checkHeld(t *testing.T, cfg string, n int) {
	t.Helper()
	held, gauge := heldOnStatus(t, cfg)
	if n == 0 {
		if len(held) != 0 || len(gauge) != 0 {
			t.Errorf("nothing held, but the status shows %+v and the gauge %v", held, gauge)
		}
		return
	}
	if len(held) != 1 || held[0].FeedID != "a" || held[0].Count != n || held[0].Since == nil ||
		!strings.Contains(held[0].Release, "feedworker release") || !strings.Contains(held[0].Release, "--feed a") {
		t.Errorf("status shows held %+v, want %d items of feed a, since when, and the release command", held, n)
	}
	if gauge["a"] != float64(n) || len(gauge) != 1 {
		t.Errorf("feedworker_items_held = %v, want a=%d", gauge, n)
	}
}

// TestPreviewShowsReposts: preview names, per item, the known item it
// would be taken for and by which matcher, and writes nothing: a pass
// after it still finds the same.
func TestPreviewShowsReposts(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newRepostEnv(t, store == "redis")
			base := townNews()
			e.pass("", map[string][]story{"a": base})
			moved := mapStories(base, func(_ int, s story) story {
				s.guid, s.link = strings.Replace(s.guid, "http:", "https:", 1), strings.Replace(s.link, "http:", "https:", 1)
				return s
			})
			fresh := story{guid: "n-9", link: "https://town.example/fresh/", title: "A fresh story", body: body(9), day: 9}
			cfg := e.write("", map[string][]story{"a": append(moved, fresh), "b": base})
			code, out, errOut := runCLI(t, "preview", "--config", cfg)
			if code != 0 {
				t.Fatalf("preview: exit %d: %s", code, errOut)
			}
			var got []struct {
				Feed  string `json:"feed"`
				Items []struct {
					ExternalID string `json:"external_id"`
					Repost     *struct {
						MatchedBy string `json:"matched_by"`
						Of        string `json:"of"`
						ContentID int64  `json:"content_id"`
						Reason    string `json:"reason"`
					} `json:"repost"`
				} `json:"items"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("preview output: %v\n%s", err, out)
			}
			by := map[string]map[string]int{}
			for _, f := range got {
				by[f.Feed] = map[string]int{}
				for _, it := range f.Items {
					switch r := it.Repost; {
					case r == nil:
						by[f.Feed]["posted"]++
					case r.ContentID == 0 || !strings.HasPrefix(r.Of, "a/") || !strings.Contains(r.Reason, "repost of content"):
						t.Errorf("feed %s item %s: repost %+v names no content of feed a", f.Feed, it.ExternalID, r)
					default:
						by[f.Feed][r.MatchedBy]++
					}
				}
			}
			if a := by["a"]; a["url"] != 3 || a["posted"] != 1 {
				t.Errorf("feed a (moved to https, one fresh story): %v, want 3 by url and 1 posted", a)
			}
			if b := by["b"]; b["across_feeds"] != 3 || b["posted"] != 0 {
				t.Errorf("feed b (the same stories): %v, want 3 across feeds", b)
			}
			// Preview wrote nothing: the pass does what preview said.
			if posts, puts := e.pass("", map[string][]story{"a": append(moved, fresh), "b": base}); posts != 1 || puts != 3 {
				t.Errorf("the pass after preview: %d POSTs, %d PUTs, want 1 and 3", posts, puts)
			}
		})
	}
}

// TestRepostOfRefusedPosts: when the first feed's copy is refused for good
// (a category id the API does not have), the second feed's copy of the
// same stories is posted: a refused copy never hides another feed's,
// whichever feed reserved the stories first in the pass.
func TestRepostOfRefusedPosts(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			for run := range 4 {
				e := newRepostEnv(t, store == "redis")
				e.feedYAML = map[string]string{"a": "    category_ids: [999]\n"}
				base := townNews()
				e.pass("", map[string][]story{"a": base, "b": base})
				byExt := map[string]int{}
				for _, it := range e.sb.AllContent() {
					byExt[it.ExternalID]++
				}
				if len(byExt) != 3 {
					t.Errorf("run %d: the API holds %v, want feed b's 3 stories once each", run, byExt)
				}
				for ext, n := range byExt {
					if n != 1 {
						t.Errorf("run %d: story %s is on the API %d times", run, ext, n)
					}
				}
				if posts, _ := e.pass("", map[string][]story{"a": base, "b": base}); posts != 0 {
					t.Errorf("run %d: a restart made %d POSTs", run, posts)
				}
			}
		})
	}
}

// TestRepostAfterASeenOnlySighting: a feed that first saw stories as old
// (recorded as seen only, never posted) and keeps carrying them holds
// their links across feeds; it must not keep them from the feeds that post
// them, nor make two such feeds post them twice: two later feeds carrying
// them in one pass give one Content per story.
func TestRepostAfterASeenOnlySighting(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newRepostEnv(t, store == "redis")
			e.feedYAML = map[string]string{"a": "    initial_items: 1\n"}
			base := townNews()
			if posts, _ := e.pass("", map[string][]story{"a": base}); posts != 1 {
				t.Fatalf("first pass with initial_items 1: %d POSTs, want 1", posts)
			}
			// A poll of feed a with news stores the aliases of every item
			// it carries, the two it saw as old included.
			news := story{guid: "http://town.example/?p=4", link: "http://town.example/2026/03/story-4/",
				title: "Story number 4 about the 4 plan", body: body(4), day: 4}
			withNews := append(slices.Clone(base), news)
			if posts, _ := e.pass("", map[string][]story{"a": withNews}); posts != 1 {
				t.Fatalf("feed a's news: %d POSTs, want 1", posts)
			}
			// Feeds b and c carry the three stories under their own GUIDs
			// (the links stay): new identities, the same stories.
			proxy := func(host string) []story {
				return mapStories(base, func(i int, s story) story {
					s.guid = fmt.Sprintf("https://%s/~r/town/%d", host, i)
					return s
				})
			}
			b, c := proxy("proxy-b.example"), proxy("proxy-c.example")
			if posts, _ := e.pass("", map[string][]story{"a": withNews, "b": b, "c": c}); posts != 2 {
				t.Errorf("two more feeds with the stories: %d POSTs, want 2 (the two feed a saw as old, once each)", posts)
			}
			if n := len(e.sb.AllContent()); n != 4 {
				t.Errorf("the API holds %d items, want 4", n)
			}
			if posts, _ := e.pass("", map[string][]story{"a": withNews, "b": b, "c": c}); posts != 0 {
				t.Errorf("a restart made %d POSTs", posts)
			}
		})
	}
}
