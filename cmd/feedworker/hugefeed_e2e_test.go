package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// hugeFeedRedisPort is the private Redis of TestStopDuringAHugeFeed.
const hugeFeedRedisPort = 6532

// boltPagesInUse reads the bytes of pages a bbolt file uses (its high-water
// page id times the page size) from the newer of its two meta pages,
// without opening it: a running worker holds the file's lock. The layout
// is bbolt's on-disk format, version 2: a 16-byte page header, then magic,
// version, page size and flags (4 bytes each), the root bucket (16), the
// freelist page id (8), the high-water page id (8) and the txid (8).
func boltPagesInUse(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var best, bestTx uint64
	var pageSize uint32
	head := make([]byte, 72)
	for i := range 2 {
		off := int64(0)
		if i == 1 {
			if pageSize == 0 {
				break
			}
			off = int64(pageSize)
		}
		if _, err := f.ReadAt(head, off); err != nil {
			return 0, fmt.Errorf("%s: meta page %d: %w", path, i, err)
		}
		if binary.LittleEndian.Uint32(head[16:]) != 0xED0CDAED {
			return 0, fmt.Errorf("%s: meta page %d: not a bbolt file", path, i)
		}
		if i == 0 {
			pageSize = binary.LittleEndian.Uint32(head[24:])
		}
		pgid, txid := binary.LittleEndian.Uint64(head[56:]), binary.LittleEndian.Uint64(head[64:])
		if txid >= bestTx {
			best, bestTx = pgid, txid
		}
	}
	return int64(best) * int64(pageSize), nil
}

// hugeFeed is an RSS document of n items.
func hugeFeed(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Huge</title><link>http://huge.test/</link><description>d</description>`)
	for i := range n {
		fmt.Fprintf(&b, `<item><title>Item %d</title><link>http://huge.test/%d</link><guid>urn:huge:%d</guid><description>Body of item %d</description><pubDate>%s</pubDate></item>`,
			i, i, i, i, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(i)*time.Minute).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return []byte(b.String())
}

// TestStopDuringAHugeFeed sends SIGTERM to `once` while it takes in a
// feed of 100,000 items, with the embedded store and with Redis: once 2 s
// after the feed was served (the fetch, parse or mapping, as load has it),
// and once its first items are recorded (the commit, cut into steps of
// 2,000). The process ends within 10 s, a commit cut short has stored no
// validators and left the feed a first sight, and the next `once` records
// the feed and delivers its newest initial_items exactly once.
//
// Each case's follow-up `once` parses, reconciles (1,000 look-ups) and
// records 100,000 items, about 20 s on the shared 2-core machine: by
// default two cases run (each store, each stop), FEEDWORKER_HUGE_FEED=1
// runs all four, and -short none.
func TestStopDuringAHugeFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the follow-up passes over 100,000 items take a minute")
	}
	const items = 100_000
	body := hugeFeed(items)
	for _, tc := range []struct {
		store, stop string
		always      bool
	}{
		{"embedded", "fetch", false}, {"embedded", "commit", true}, {"redis", "fetch", true}, {"redis", "commit", false},
	} {
		if !tc.always && os.Getenv("FEEDWORKER_HUGE_FEED") != "1" {
			continue
		}
		store := tc.store
		t.Run(store+"/"+tc.stop, func(t *testing.T) {
			e := newE2E(t, feedfarm.Options{}, sandbox.Faults{})
			var served atomic.Int64
			feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/rss+xml")
				_, _ = w.Write(body)
				served.Add(1)
			}))
			t.Cleanup(feed.Close)
			dbPath := filepath.Join(e.dir, "huge.db")
			storeYAML := "store:\n  path: " + dbPath + "\n"
			var rc *redis.Client
			if store == "redis" {
				srv := dedupetest.StartServerOn(t, hugeFeedRedisPort)
				storeYAML = fmt.Sprintf("redis:\n  url: redis://%s/0\n  prefix: %q\n", srv.Addr(), e.prefix)
				rc = redis.NewClient(srv.Options())
				t.Cleanup(func() { rc.Close() })
			}
			// recordedItems counts the feed's records, once the worker
			// has exited (the embedded file is locked while it runs); the
			// layouts are dedupe's (see its package doc and Bolt's).
			recordedItems := func() int {
				if rc != nil {
					keys, _, err := rc.Scan(t.Context(), 0, e.prefix+"*f:huge:rec", 1000).Result()
					if err != nil || len(keys) == 0 {
						return 0
					}
					n, err := rc.HLen(t.Context(), keys[0]).Result()
					if err != nil {
						t.Fatal(err)
					}
					return int(n)
				}
				db, err := bolt.Open(dbPath, 0o600, &bolt.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				n := 0
				err = db.View(func(tx *bolt.Tx) error {
					if f := tx.Bucket([]byte("feeds")).Bucket([]byte("huge")); f != nil {
						n = f.Bucket([]byte("rec")).Stats().KeyN
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			// openStore opens the store the worker used, once it has
			// exited.
			openStore := func() dedupe.Store {
				if rc != nil {
					return dedupe.NewRedis(redis.NewClient(rc.Options()), dedupe.RedisOptions{Prefix: e.prefix})
				}
				s, err := dedupe.OpenBolt(dbPath, dedupe.BoltOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			// committing reports whether the feed's first items are
			// recorded: the commit is under way (or done).
			committing := func() bool {
				if rc == nil {
					// The file's size says nothing (bbolt grows it
					// 16 MiB at a time); the pages in use pass 1 MiB
					// only with the records.
					n, err := boltPagesInUse(dbPath)
					return err == nil && n > 1<<20
				}
				keys, _, err := rc.Scan(t.Context(), 0, e.prefix+"*f:huge:seen", 1000).Result()
				if err != nil || len(keys) == 0 {
					return false
				}
				n, err := rc.ZCard(t.Context(), keys[0]).Result()
				return err == nil && n > 0
			}
			cfg := filepath.Join(e.dir, "huge.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
%shttp:
  max_body_size: 104857600
admin:
  listen: ""
defaults:
  initial_items: 10
feeds:
  - id: huge
    url: %s/huge.xml
`, e.sbURL, e.sbURL, storeYAML, feed.URL)), 0o600); err != nil {
				t.Fatal(err)
			}

			first := e.start("huge-1", "once", "--config", cfg)
			waitFor(t, 120*time.Second, "the feed to be served", func() bool { return served.Load() > 0 })
			if tc.stop == "fetch" {
				// Into the parse, the mapping or the commit of the feed.
				time.Sleep(2 * time.Second)
			} else {
				waitFor(t, 300*time.Second, "the feed's first items recorded", committing)
			}
			stopAt := time.Now()
			_ = first.Process.Signal(syscall.SIGTERM)
			exited := make(chan error, 1)
			go func() { exited <- first.Wait() }()
			select {
			case err := <-exited:
				t.Logf("SIGTERM to exit: %s (%v)", time.Since(stopAt).Round(10*time.Millisecond), err)
				// Where the stop found it, for whoever reads the run.
				if b, rerr := os.ReadFile(filepath.Join(e.dir, "huge-1.log")); rerr == nil {
					lines := strings.Split(strings.TrimSpace(string(b)), "\n")
					t.Logf("the stopped once's last log lines:\n%s", strings.Join(lines[max(0, len(lines)-4):], "\n"))
				}
			case <-time.After(stopBound):
				t.Errorf("once did not exit within %s of SIGTERM", stopBound)
				<-exited
			}

			// What the stop left: a commit cut short has stored no
			// validators and recorded some of the items.
			recorded := recordedItems()
			st := openStore()
			// A Diff of no item stores nothing; it says whether the feed
			// is known.
			d, err := st.Diff(t.Context(), "huge", nil, nil, time.Now())
			_, validated, verr := st.Validators(t.Context(), "huge")
			st.Close()
			if err = errors.Join(err, verr); err != nil {
				t.Fatal(err)
			}
			t.Logf("the stop left %d of %d items recorded, validators stored %v, feed known %v", recorded, items, validated, d.Known)
			if recorded < items && (validated || d.Known) {
				t.Errorf("a commit cut short after %d of %d items stored validators (%v) or ended the first sight (%v)", recorded, items, validated, d.Known)
			}
			if tc.stop == "commit" && recorded == 0 {
				t.Errorf("stopped once the first items were recorded, yet none are")
			}

			second := exec.Command(e.bin, "once", "--config", cfg)
			out, err := second.CombinedOutput()
			if err != nil {
				t.Fatalf("the next once: %v\n%s", err, out[max(0, len(out)-3000):])
			}
			e.assertExactlyOnce(10)
		})
	}
}
