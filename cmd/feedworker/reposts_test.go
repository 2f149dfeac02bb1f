package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/sandbox"
)

// story is one item of a test RSS file.
type story struct {
	guid, link, title, body string
	day                     int // publication day in March 2026
}

func rssOf(items []story) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Town news</title><link>https://example.org/</link>`)
	for _, it := range items {
		fmt.Fprintf(&b, "<item><title>%s</title>", it.title)
		if it.guid != "" {
			fmt.Fprintf(&b, "<guid>%s</guid>", it.guid)
		}
		if it.link != "" {
			fmt.Fprintf(&b, "<link>%s</link>", it.link)
		}
		fmt.Fprintf(&b, "<pubDate>%s</pubDate><description><![CDATA[<p>%s</p>]]></description></item>",
			time.Date(2026, 3, it.day, 9, 0, 0, 0, time.UTC).Format(time.RFC1123Z), it.body)
	}
	b.WriteString("</channel></rss>")
	return b.String()
}

// body is a long text unique to n (enough words for SimHash).
func body(n int) string {
	topics := []string{"library", "council", "harbour", "school", "market", "bridge", "orchestra", "garden", "station", "museum"}
	t := topics[n%len(topics)]
	return strings.Repeat(fmt.Sprintf("The %s committee met on day %d and agreed a plan for the %s, with volunteers, funding and a timetable for the works. ", t, n, t), 4)
}

// townNews are three stories of a WordPress-like site on http.
func townNews() []story {
	var out []story
	for i := 1; i <= 3; i++ {
		out = append(out, story{guid: fmt.Sprintf("http://town.example/?p=%d", i), link: fmt.Sprintf("http://town.example/2026/03/story-%d/", i),
			title: fmt.Sprintf("Story number %d about the %d plan", i, i), body: body(i), day: i})
	}
	return out
}

func mapStories(in []story, f func(i int, s story) story) []story {
	out := make([]story, len(in))
	for i, s := range in {
		out[i] = f(i, s)
	}
	return out
}

// repostEnv is a sandbox, two RSS files and a config over them, on the
// embedded store or on Redis.
type repostEnv struct {
	t        *testing.T
	sb       *sandbox.Server
	dir      string
	storeYML string
	requests int // sandbox requests seen before the current pass
	// feedYAML is more configuration of one feed (by id), for every pass.
	feedYAML map[string]string
}

func newRepostEnv(t *testing.T, onRedis bool) *repostEnv {
	sb, err := sandbox.New(sandbox.Options{RequestLogSize: 100000})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(sb)
	t.Cleanup(ss.Close)
	e := &repostEnv{t: t, sb: sb, dir: t.TempDir()}
	e.storeYML = fmt.Sprintf("store:\n  path: %s\n", filepath.Join(e.dir, "s.db"))
	if onRedis {
		var b [6]byte
		_, _ = rand.Read(b[:])
		prefix := "fw-reposts-" + hex.EncodeToString(b[:]) + ":"
		e.storeYML = fmt.Sprintf("redis:\n  url: %s\n  prefix: %q\n", redisURL(), prefix)
		opt, err := redis.ParseURL(redisURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c := redis.NewClient(opt)
			defer c.Close()
			if err := dedupetest.DeletePrefix(context.Background(), c, prefix); err != nil {
				t.Logf("cleaning %s: %v", prefix, err)
			}
		})
	}
	e.storeYML += fmt.Sprintf("api:\n  base_url: %s\n  token_url: %s/oauth/token\n  client_id: sandbox\n  client_secret: sandbox-secret\nadmin:\n  listen: \"\"\n", ss.URL, ss.URL)
	return e
}

// pass writes the feeds' files, runs one `once` (a fresh worker each time:
// every pass is a restart) and returns the POSTs and PUTs it made.
func (e *repostEnv) pass(extraFeedYAML string, feeds map[string][]story) (posts, puts int) {
	e.t.Helper()
	cfg := e.write(extraFeedYAML, feeds)
	if code, _, errOut := runCLI(e.t, "once", "--config", cfg, "--log-level", "warn"); code != 0 {
		e.t.Fatalf("once: exit %d: %s", code, errOut)
	}
	return e.sent()
}

// write writes the feeds' files and the config over them, and returns the
// config's path.
func (e *repostEnv) write(extraFeedYAML string, feeds map[string][]story) string {
	e.t.Helper()
	var fy strings.Builder
	for _, id := range []string{"a", "b"} {
		items, ok := feeds[id]
		if !ok {
			continue
		}
		path := filepath.Join(e.dir, id+".xml")
		if err := os.WriteFile(path, []byte(rssOf(items)), 0o600); err != nil {
			e.t.Fatal(err)
		}
		initial := "    initial_items: 10\n"
		if strings.Contains(e.feedYAML[id], "initial_items:") {
			initial = ""
		}
		fmt.Fprintf(&fy, "  - id: %s\n    url: file://%s\n%s%s%s", id, path, initial, extraFeedYAML, e.feedYAML[id])
	}
	return writeFile(e.t, e.dir, "c.yaml", e.storeYML+"feeds:\n"+fy.String())
}

// sent counts the POSTs and PUTs since the last count.
func (e *repostEnv) sent() (posts, puts int) {
	reqs := e.sb.Requests()
	for _, r := range reqs[e.requests:] {
		if r.Status >= 300 || !strings.HasPrefix(r.Path, "/v3/") {
			continue
		}
		switch {
		case r.Method == "POST" && r.Path != "/v3/category":
			posts++
		case r.Method == "PUT":
			puts++
		}
	}
	e.requests = len(reqs)
	return posts, puts
}

// TestRepostShapes runs each way a story comes back, against the sandbox,
// on the embedded store and on Redis; every pass is a fresh worker.
func TestRepostShapes(t *testing.T) {
	t.Parallel()
	base := townNews()
	shapes := []struct {
		name        string
		second      map[string][]story // feeds of the second pass
		posts, puts int
	}{
		{"nothing changed", map[string][]story{"a": base}, 0, 0},
		{"scheme change", map[string][]story{"a": mapStories(base, func(_ int, s story) story {
			s.guid, s.link = strings.Replace(s.guid, "http:", "https:", 1), strings.Replace(s.link, "http:", "https:", 1)
			return s
		})}, 0, 3},
		{"www host", map[string][]story{"a": mapStories(base, func(_ int, s story) story {
			s.guid, s.link = strings.Replace(s.guid, "town.", "www.town.", 1), strings.Replace(s.link, "town.", "www.town.", 1)
			return s
		})}, 0, 3},
		{"trailing slash dropped, link identity", map[string][]story{"a": mapStories(base, func(_ int, s story) story {
			s.guid = strings.Replace(s.guid, "?p=", "?post=", 1) // a new GUID
			s.link = strings.TrimSuffix(s.link, "/")
			return s
		})}, 0, 3},
		{"proxy rewrites links and GUIDs", map[string][]story{"a": mapStories(base, func(i int, s story) story {
			s.guid, s.link = fmt.Sprintf("https://proxy.example/~r/town/~3/%d", 100+i), fmt.Sprintf("https://proxy.example/~r/town/~3/%d/", 100+i)
			return s
		})}, 0, 3},
		{"GUID follows an edited title, same day and text", map[string][]story{"a": mapStories(base, func(i int, s story) story {
			if i == 0 {
				s.title += " (updated)"
				s.guid, s.link = "http://town.example/2026/03/story-1-updated/", "http://town.example/2026/03/story-1-updated/"
			}
			return s
		})}, 0, 1},
		{"platform migration", map[string][]story{"a": mapStories(base, func(i int, s story) story {
			s.guid, s.link = fmt.Sprintf("https://newplatform.example/p/%x", 4096+i), fmt.Sprintf("https://newplatform.example/town/p/%x", 4096+i)
			return s
		})}, 0, 3},
		{"same story in a second feed", map[string][]story{"a": base, "b": base}, 0, 0},
		{"same title on another day posts", map[string][]story{"a": append(append([]story{}, base...),
			story{guid: "http://town.example/?p=9", link: "http://town.example/weekly-9/", title: base[0].title, body: base[0].body, day: 10})}, 1, 0},
		{"podcast episodes linking to the show page post", map[string][]story{"a": append(mapStories(base, func(_ int, s story) story {
			s.link = "http://town.example/podcast/"
			return s
		}), story{guid: "ep-4", link: "http://town.example/podcast/", title: "Episode 4", body: body(4), day: 4})}, 1, 3},
		{"short boilerplate bodies post", map[string][]story{"a": append(append([]story{}, base...),
			story{guid: "photo-2", link: "http://town.example/photo-2/", title: base[0].title, body: "Photo of the day.", day: base[0].day})}, 1, 0},
		{"a link reused for another story posts", map[string][]story{"a": append(mapStories(base[1:], func(_ int, s story) story { return s }),
			story{guid: "http://town.example/?p=50", link: base[0].link, title: "Completely different headline today", body: body(8), day: 5})}, 1, 0},
		{"two items of one fetch post", map[string][]story{"a": append(append([]story{}, base...),
			story{guid: "x-1", link: "http://town.example/new-story/", title: "New story", body: body(7), day: 7},
			story{guid: "x-2", link: "https://www.town.example/new-story", title: "New story", body: body(7), day: 7})}, 2, 0},
	}
	for _, store := range []string{"bolt", "redis"} {
		for _, sh := range shapes {
			t.Run(store+"/"+sh.name, func(t *testing.T) {
				t.Parallel()
				e := newRepostEnv(t, store == "redis")
				if posts, puts := e.pass("", map[string][]story{"a": base}); posts != 3 || puts != 0 {
					t.Fatalf("first pass: %d POSTs, %d PUTs, want 3 and 0", posts, puts)
				}
				posts, puts := e.pass("", sh.second)
				if posts != sh.posts || puts != sh.puts {
					t.Errorf("second pass: %d POSTs, %d PUTs, want %d and %d", posts, puts, sh.posts, sh.puts)
				}
				// A third pass of the same files (another restart) sends nothing.
				if posts, puts := e.pass("", sh.second); posts != 0 || puts != 0 {
					t.Errorf("third pass: %d POSTs, %d PUTs, want none", posts, puts)
				}
			})
		}
	}
}

// TestRepostsOff: match: [] and across_feeds: false give the old
// behaviour, each new identity a POST (the shapes above would fail so).
func TestRepostsOff(t *testing.T) {
	t.Parallel()
	off := "    reposts:\n      match: []\n      across_feeds: false\n"
	e := newRepostEnv(t, false)
	base := townNews()
	if posts, _ := e.pass(off, map[string][]story{"a": base}); posts != 3 {
		t.Fatalf("first pass: %d POSTs, want 3", posts)
	}
	moved := mapStories(base, func(_ int, s story) story {
		s.guid, s.link = strings.Replace(s.guid, "http:", "https:", 1), strings.Replace(s.link, "http:", "https:", 1)
		return s
	})
	if posts, puts := e.pass(off, map[string][]story{"a": moved, "b": moved}); posts != 6 || puts != 0 {
		t.Errorf("https move and a second feed with matching off: %d POSTs, %d PUTs, want 6 and 0", posts, puts)
	}
}

// TestFloodHeldAndReleased: a feed that republishes 30 older items under
// new identities (and whose text matches nothing) has them held; a burst
// of newer items is not; release --all posts the held ones exactly once,
// and --drop posts nothing.
func TestFloodHeldAndReleased(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newRepostEnv(t, store == "redis")
			first := []story{{guid: "n-1", link: "https://site.example/n-1", title: "Latest news", body: body(1), day: 20}}
			if posts, _ := e.pass("", map[string][]story{"a": first}); posts != 1 {
				t.Fatalf("first pass: %d POSTs, want 1", posts)
			}
			// 30 new items dated after the newest: a burst, not held.
			burst := append([]story{}, first...)
			for i := range 30 {
				burst = append(burst, story{guid: fmt.Sprintf("b-%d", i), link: fmt.Sprintf("https://site.example/b-%d", i), title: fmt.Sprintf("Burst %d", i), body: "Short.", day: 21})
			}
			if posts, _ := e.pass("", map[string][]story{"a": burst}); posts != 30 {
				t.Fatalf("a burst of newer items: %d POSTs, want 30", posts)
			}
			// 30 new items dated before the newest: held.
			flood := append([]story{}, burst...)
			for i := range 30 {
				flood = append(flood, story{guid: fmt.Sprintf("old-%d", i), link: fmt.Sprintf("https://other.example/old-%d", i), title: fmt.Sprintf("Archive %d", i), body: "Old.", day: 1 + i%19})
			}
			if posts, _ := e.pass("", map[string][]story{"a": flood}); posts != 0 {
				t.Fatalf("a republished history: %d POSTs, want 0 (held)", posts)
			}
			if posts, _ := e.pass("", map[string][]story{"a": flood}); posts != 0 {
				t.Fatalf("the poll after the flood: %d POSTs, want 0", posts)
			}
			cfg := filepath.Join(e.dir, "c.yaml")
			checkHeld(t, cfg, 30)
			code, out, errOut := runCLI(t, "release", "--config", cfg, "--feed", "a", "--all", "--log-level", "error")
			if code != 0 || !strings.Contains(out, "30 items released") {
				t.Fatalf("release --all: exit %d\n%s%s", code, out, errOut)
			}
			if posts, _ := e.sent(); posts != 30 {
				t.Errorf("release --all made %d POSTs, want 30", posts)
			}
			checkHeld(t, cfg, 0)
			if n := len(e.sb.AllContent()); n != 61 {
				t.Errorf("after release the API holds %d items, want 61", n)
			}
			code, out, _ = runCLI(t, "release", "--config", cfg, "--feed", "a", "--all", "--log-level", "error")
			if code != 0 || !strings.Contains(out, "no items held") {
				t.Errorf("second release: exit %d\n%s", code, out)
			}
			if posts, _ := e.sent(); posts != 0 {
				t.Errorf("a second release made %d POSTs", posts)
			}
			if posts, _ := e.pass("", map[string][]story{"a": flood}); posts != 0 {
				t.Errorf("a poll after release: %d POSTs, want 0", posts)
			}
			if n := len(e.sb.AllContent()); n != 61 {
				t.Errorf("after a second release and a poll the API holds %d items, want 61", n)
			}

			// Another flood, dropped.
			for i := range 30 {
				flood = append(flood, story{guid: fmt.Sprintf("older-%d", i), link: fmt.Sprintf("https://third.example/o-%d", i), title: fmt.Sprintf("Older %d", i), body: "Older.", day: 1 + i%19})
			}
			if posts, _ := e.pass("", map[string][]story{"a": flood}); posts != 0 {
				t.Fatalf("a second flood: %d POSTs, want 0", posts)
			}
			code, out, _ = runCLI(t, "release", "--config", cfg, "--feed", "a", "--drop", "--log-level", "error")
			if code != 0 || !strings.Contains(out, "0 items released for posting, 30 items recorded as seen") {
				t.Errorf("release --drop: exit %d\n%s", code, out)
			}
			if n := len(e.sb.AllContent()); n != 61 {
				t.Errorf("after --drop the API holds %d items, want 61", n)
			}
		})
	}
}

// TestRepostInHistory: explain tells an operator what became of a repost.
func TestRepostInHistory(t *testing.T) {
	t.Parallel()
	e := newRepostEnv(t, false)
	base := townNews()
	e.pass("", map[string][]story{"a": base})
	moved := mapStories(base, func(_ int, s story) story {
		s.guid, s.link = strings.Replace(s.guid, "http:", "https:", 1), strings.Replace(s.link, "http:", "https:", 1)
		return s
	})
	e.pass("", map[string][]story{"a": moved})
	code, out, errOut := runCLI(t, "explain", "--config", filepath.Join(e.dir, "c.yaml"), "--feed", "a")
	if code != 0 || !strings.Contains(out, "repost of content") || !strings.Contains(out, "matched by link or GUID") {
		t.Errorf("explain --feed a: exit %d\n%s%s", code, out, errOut)
	}
}
