package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
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

