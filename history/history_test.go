package history_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/history"
)

// stores runs fn against both stores with the same limits.
func stores(t *testing.T, lim history.Limits, fn func(t *testing.T, s history.Store, rc *redis.Client)) {
	t.Run("redis", func(t *testing.T) {
		c, prefix := dedupetest.Redis(t)
		fn(t, history.NewRedis(c, prefix, lim), c)
	})
	t.Run("bolt", func(t *testing.T) {
		fn(t, history.NewBolt(openBolt(t), lim), nil)
	})
}

func openBolt(t testing.TB) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// digestOf is a Digest with the given sums, every other group's 0.
func digestOf(sums map[history.Field]uint32) history.Digest {
	var d history.Digest
	d.Set(history.FieldType, 0)
	for f, v := range sums {
		d.Set(f, v)
	}
	return d
}

func TestFatesOfOneItem(t *testing.T) {
	t.Parallel()
	stores(t, history.Limits{}, func(t *testing.T, s history.Store, rc *redis.Client) {
		ctx := t.Context()
		dg1 := digestOf(map[history.Field]uint32{history.FieldTitle: 0xaa, history.FieldBody: 0xbb, history.FieldImage: 0xcc})
		dg2 := digestOf(map[history.Field]uint32{history.FieldTitle: 0xa2, history.FieldBody: 0xbb, history.FieldLink: 0xdd})
		steps := []history.Update{
			{ID: "x1", Title: "First", Link: "https://e.com/1", GUID: "g1", Seen: true, Digest: dg1, Event: history.Event{Kind: history.Queued, At: ms(0)}},
			{ID: "x1", Event: history.Event{Kind: history.Retrying, At: ms(time.Second), Attempt: 1, Status: 503, Next: ms(3 * time.Second), Detail: "503 Service Unavailable"}},
			{ID: "x1", Event: history.Event{Kind: history.Published, At: ms(4 * time.Second), ContentID: 42}},
			{ID: "x1", Seen: true, Digest: dg1, Event: history.Event{Kind: history.Unchanged, At: ms(time.Minute)}},
			{ID: "x1", Seen: true, Digest: dg1, Event: history.Event{Kind: history.Unchanged, At: ms(2 * time.Minute)}},
			{ID: "x1", Title: "First, fixed", Seen: true, Digest: dg2, Event: history.Event{Kind: history.Changed, At: ms(3 * time.Minute)}},
			{ID: "x1", Event: history.Event{Kind: history.Updated, At: ms(3*time.Minute + time.Second), ContentID: 42}},
		}
		// One write per step, as separate flushes would.
		for _, u := range steps {
			if err := s.Write(ctx, []history.Batch{{Feed: "news", Items: []history.Update{u}}}, nil, -1, t0); err != nil {
				t.Fatal(err)
			}
		}
		f, err := s.Feed(ctx, "news")
		if err != nil {
			t.Fatal(err)
		}
		want := []history.Item{{
			ID: "x1", Title: "First, fixed", Link: "https://e.com/1", GUID: "g1",
			FirstSeen: ms(0), LastSeen: ms(3 * time.Minute), Digest: dg2.Map(),
			Events: []history.Event{
				{Kind: history.Queued, At: ms(0)},
				{Kind: history.Retrying, At: ms(time.Second), Attempt: 1, Status: 503, Next: ms(3 * time.Second), Detail: "503 Service Unavailable"},
				{Kind: history.Published, At: ms(4 * time.Second), ContentID: 42},
				{Kind: history.Unchanged, At: ms(2 * time.Minute), Count: 2},
				{Kind: history.Changed, At: ms(3 * time.Minute), Fields: []string{"image", "link", "title"}},
				{Kind: history.Updated, At: ms(3*time.Minute + time.Second), ContentID: 42},
			},
		}}
		if diff := cmp.Diff(want, f.Items); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		if got := f.Items[0].ContentID(); got != 42 {
			t.Errorf("ContentID() = %d, want 42", got)
		}
	})
}

func TestPollsAndSearch(t *testing.T) {
	t.Parallel()
	stores(t, history.Limits{}, func(t *testing.T, s history.Store, rc *redis.Client) {
		ctx := t.Context()
		b := []history.Batch{
			{Feed: "a", Polls: []history.Poll{{At: ms(0), Result: "ok", StatusCode: 200, Bytes: 1200, New: 2, ETag: `"v1"`}},
				Items: []history.Update{
					{ID: "a-1", Title: "Tour dates announced", Link: "https://a.example/tour", Seen: true, Event: history.Event{Kind: history.Queued, At: ms(0)}},
					{ID: "guid:zz", Title: "Sponsored: buy now", GUID: "zz", Seen: true, Event: history.Event{Kind: history.Filtered, At: ms(0), Detail: "excluded: sponsored in title"}},
				}},
			{Feed: "b", Polls: []history.Poll{{At: ms(0), Result: "error_http", StatusCode: 500, Error: "http status 500"}}},
		}
		if err := s.Write(ctx, b, nil, -1, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []history.Batch{{Feed: "b", Polls: []history.Poll{{At: ms(time.Minute), Result: "not_modified", StatusCode: 304}}}}, nil, -1, t0); err != nil {
			t.Fatal(err)
		}
		polls, err := s.Polls(ctx, []string{"a", "b", "none"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(polls["b"]); got != 2 || polls["b"][0].Result != "not_modified" || polls["b"][1].Error != "http status 500" {
			t.Errorf("polls of b, newest first = %+v", polls["b"])
		}
		if len(polls["a"]) != 1 || polls["a"][0].ETag != `"v1"` || len(polls["none"]) != 0 {
			t.Errorf("polls = %+v", polls)
		}
		for q, want := range map[string]string{"TOUR": "a-1", "a.example/tour": "a-1", "zz": "guid:zz", "a-1": "a-1", "nothing": ""} {
			found, err := s.Find(ctx, []string{"a", "b"}, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if len(found) > 0 {
				got = found[0].Item.ID
			}
			if got != want || len(found) > 1 {
				t.Errorf("Find(%q) = %+v, want %q", q, found, want)
			}
		}
	})
}

func TestHours(t *testing.T) {
	t.Parallel()
	stores(t, history.Limits{}, func(t *testing.T, s history.Store, rc *redis.Client) {
		ctx := t.Context()
		now := t0.Add(90 * time.Minute)
		h0, h1 := t0.UnixMilli(), t0.Add(time.Hour).UnixMilli()
		for range 2 {
			if err := s.Write(ctx, nil, map[int64]history.Hour{h0: {Published: 3, Failed: 1}, h1: {Updated: 2}}, 7, now); err != nil {
				t.Fatal(err)
			}
		}
		hours, err := s.Hours(ctx, t0.Add(-time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		want := []history.Hour{
			{Start: t0.Add(-time.Hour).UnixMilli(), Outbox: -1},
			{Start: h0, Published: 6, Failed: 2, Outbox: -1},
			{Start: h1, Updated: 4, Outbox: 7},
		}
		if diff := cmp.Diff(want, hours); diff != "" {
			t.Errorf("hours (-want +got):\n%s", diff)
		}
	})
}

// TestBoundedUnderManyPolls: a feed polled a thousand times, each poll
// bringing new items, keeps exactly its bound of items and polls, the
// newest ones.
func TestBoundedUnderManyPolls(t *testing.T) {
	t.Parallel()
	lim := history.Limits{Items: 50, Polls: 30}
	stores(t, lim, func(t *testing.T, s history.Store, rc *redis.Client) {
		ctx := t.Context()
		const polls, perPoll = 1000, 5
		for p := range polls {
			at := ms(time.Duration(p) * time.Minute)
			b := history.Batch{Feed: "busy", Polls: []history.Poll{{At: at, Result: "ok", StatusCode: 200, New: perPoll}}}
			for i := range perPoll {
				id := fmt.Sprintf("item-%d-%d", p, i)
				b.Items = append(b.Items,
					history.Update{ID: id, Title: "Title " + id, Seen: true, Event: history.Event{Kind: history.Queued, At: at}},
					history.Update{ID: id, Event: history.Event{Kind: history.Published, At: at + 1, ContentID: int64(p*perPoll + i)}})
			}
			// An old item seen on every poll stays (it is active).
			b.Items = append(b.Items, history.Update{ID: "evergreen", Seen: true, Event: history.Event{Kind: history.Unchanged, At: at}})
			if err := s.Write(ctx, []history.Batch{b}, nil, -1, t0); err != nil {
				t.Fatal(err)
			}
		}
		f, err := s.Feed(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Items) != lim.Items || len(f.Polls) != lim.Polls {
			t.Fatalf("kept %d items and %d polls, want %d and %d", len(f.Items), len(f.Polls), lim.Items, lim.Polls)
		}
		if f.Polls[0].At != ms((polls-1)*time.Minute) {
			t.Errorf("newest poll at %d, want the last one", f.Polls[0].At)
		}
		var ever *history.Item
		for i, it := range f.Items {
			if it.ID == "evergreen" {
				ever = &f.Items[i]
				continue
			}
			var p, n int
			if _, err := fmt.Sscanf(it.ID, "item-%d-%d", &p, &n); err != nil || p < polls-lim.Items/perPoll {
				t.Errorf("item %s kept, want only the newest", it.ID)
			}
		}
		if ever == nil || len(ever.Events) != 1 || ever.Events[0].Count != polls {
			t.Errorf("the item seen on every poll = %+v, want one unchanged event counted %d times", ever, polls)
		}
		if rc != nil {
			// Nothing outside the bound lingers in the keys themselves.
			keys := s.(*history.Redis).Keys("busy")
			hlen, zlen, llen := rc.HLen(ctx, keys[0]).Val(), rc.ZCard(ctx, keys[1]).Val(), rc.LLen(ctx, keys[2]).Val()
			if hlen != int64(lim.Items) || zlen != int64(lim.Items) || llen != int64(lim.Polls) {
				t.Errorf("HLEN %d, ZCARD %d, LLEN %d; want %d, %d, %d", hlen, zlen, llen, lim.Items, lim.Items, lim.Polls)
			}
		}
	})
}

// TestRedisWriteIsOneRoundTrip: what a flush writes for many feeds, with
// the hour counts and the outbox sample, costs Redis one round trip.
func TestRedisWriteIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	c, prefix := dedupetest.Redis(t)
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := history.NewRedis(c, prefix, history.Limits{})
	ctx := t.Context()
	var batches []history.Batch
	for f := range 20 {
		feed := fmt.Sprintf("feed-%d", f)
		batches = append(batches, history.Batch{Feed: feed,
			Polls: []history.Poll{{At: ms(0), Result: "ok", StatusCode: 200}},
			Items: []history.Update{{ID: feed + "-1", Seen: true, Event: history.Event{Kind: history.Queued, At: ms(0)}}}})
	}
	hours := map[int64]history.Hour{t0.UnixMilli(): {Published: 3}}
	// The first write may load the script; the second is the steady state.
	if err := s.Write(ctx, batches, hours, 5, t0); err != nil {
		t.Fatal(err)
	}
	before := rt.Count()
	if err := s.Write(ctx, batches, hours, 5, t0); err != nil {
		t.Fatal(err)
	}
	if n := rt.Count() - before; n != 1 {
		t.Errorf("a write of 20 feeds took %d round trips, want 1", n)
	}
}

// TestRedisKeysExpire: a feed's keys live Limits.TTL after its last write,
// so the history of a feed removed from the config goes by itself.
func TestRedisKeysExpire(t *testing.T) {
	t.Parallel()
	c, prefix := dedupetest.Redis(t)
	s := history.NewRedis(c, prefix, history.Limits{TTL: time.Hour})
	b := history.Batch{Feed: "f", Polls: []history.Poll{{At: ms(0), Result: "ok"}},
		Items: []history.Update{{ID: "1", Event: history.Event{Kind: history.Queued, At: ms(0)}}}}
	if err := s.Write(t.Context(), []history.Batch{b}, nil, -1, t0); err != nil {
		t.Fatal(err)
	}
	for _, k := range s.Keys("f") {
		if ttl := c.PTTL(t.Context(), k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("%s: TTL %v, want up to an hour", k, ttl)
		}
	}
}

// TestOneWriteBeyondTheBound: one write bringing many times the bound (a
// first sight of a big feed), some of them updates of kept items, keeps
// the newest by activity, and the kept items that were updated keep
// their earlier events.
func TestOneWriteBeyondTheBound(t *testing.T) {
	t.Parallel()
	lim := history.Limits{Items: 50, Polls: 30}
	stores(t, lim, func(t *testing.T, s history.Store, _ *redis.Client) {
		ctx := t.Context()
		var first history.Batch
		first.Feed = "big"
		for i := range 40 {
			id := fmt.Sprintf("old-%02d", i)
			first.Items = append(first.Items, history.Update{ID: id, Seen: true, Event: history.Event{Kind: history.Queued, At: ms(time.Duration(i) * time.Second)}})
		}
		if err := s.Write(ctx, []history.Batch{first}, nil, -1, t0); err != nil {
			t.Fatal(err)
		}
		// 1,000 new items, their activity scattered (ids out of order of
		// activity), and the ten newest old items published in between.
		b := history.Batch{Feed: "big"}
		for i := range 1000 {
			at := ms(time.Hour + time.Duration((i*7919)%1000)*time.Second)
			b.Items = append(b.Items, history.Update{ID: fmt.Sprintf("new-%04d", i), Seen: true, Event: history.Event{Kind: history.Queued, At: at}})
			if i%100 == 0 {
				old := fmt.Sprintf("old-%02d", 30+i/100)
				b.Items = append(b.Items, history.Update{ID: old, Event: history.Event{Kind: history.Published, At: ms(time.Hour + 995*time.Second), ContentID: int64(i + 1)}})
			}
		}
		if err := s.Write(ctx, []history.Batch{b}, nil, -1, t0); err != nil {
			t.Fatal(err)
		}
		f, err := s.Feed(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]history.Item{}
		for _, it := range f.Items {
			got[it.ID] = it
		}
		if len(got) != lim.Items {
			t.Fatalf("kept %d items, want %d", len(got), lim.Items)
		}
		// The newest 50: the ten old items published at +995 s and the new
		// items at activity +960 s … +999 s (i*7919 mod 1000 hits each once).
		for i := range 1000 {
			id := fmt.Sprintf("new-%04d", i)
			_, kept := got[id]
			if want := (i*7919)%1000 >= 960; kept != want {
				t.Errorf("%s kept %v, want %v", id, kept, want)
			}
		}
		for i := 30; i < 40; i++ {
			it, ok := got[fmt.Sprintf("old-%02d", i)]
			if !ok || len(it.Events) != 2 || it.Events[0].Kind != history.Queued || it.Events[1].Kind != history.Published {
				t.Errorf("old-%02d = %+v, want kept with its queued and published events", i, it)
			}
		}
	})
}

// TestChangedWithTheSameDigestNamesNoFields: a Changed event whose digest is
// the one stored names no fields on either store, whether the digest came in
// the same batch or an earlier write. The update carries stale Fields, as a
// caller might: the store fills them, so it must also clear them.
func TestChangedWithTheSameDigestNamesNoFields(t *testing.T) {
	t.Parallel()
	dg := digestOf(map[history.Field]uint32{history.FieldTitle: 0xaa, history.FieldBody: 0xbb})
	queued := history.Update{ID: "x1", Title: "T", Seen: true, Digest: dg, Event: history.Event{Kind: history.Queued, At: ms(0)}}
	changed := history.Update{ID: "x1", Seen: true, Digest: dg, Event: history.Event{Kind: history.Changed, At: ms(time.Minute), Fields: []string{"stale"}}}
	want := []history.Event{{Kind: history.Queued, At: ms(0)}, {Kind: history.Changed, At: ms(time.Minute)}}
	for name, writes := range map[string][][]history.Update{
		"one batch":  {{queued, changed}},
		"two writes": {{queued}, {changed}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stores(t, history.Limits{}, func(t *testing.T, s history.Store, rc *redis.Client) {
				ctx := t.Context()
				for _, items := range writes {
					if err := s.Write(ctx, []history.Batch{{Feed: "news", Items: items}}, nil, -1, t0); err != nil {
						t.Fatal(err)
					}
				}
				f, err := s.Feed(ctx, "news")
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Items) != 1 {
					t.Fatalf("items = %+v, want x1 alone", f.Items)
				}
				if diff := cmp.Diff(want, f.Items[0].Events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(dg.Map(), f.Items[0].Digest); diff != "" {
					t.Errorf("digest (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestRedisWriteWithoutScripts: a Redis that does not have the write
// script (a fresh one, one restarted or whose scripts were flushed) gets
// it in full, and the write counts each hour's events once: only the
// scripts that did not run are sent again. Both feeds of the write get
// their item once.
func TestRedisWriteWithoutScripts(t *testing.T) {
	t.Parallel()
	srv := dedupetest.StartServer(t)
	c := redis.NewClient(srv.Options())
	t.Cleanup(func() { c.Close() })
	s := history.NewRedis(c, "p:", history.Limits{})
	ctx := t.Context()
	now := t0.Add(30 * time.Minute)
	write := func(id string, at time.Duration) {
		t.Helper()
		var batches []history.Batch
		for _, feed := range []string{"a", "b"} {
			batches = append(batches, history.Batch{Feed: feed, Items: []history.Update{{ID: id, Seen: true, Event: history.Event{Kind: history.Queued, At: ms(at)}}}})
		}
		if err := s.Write(ctx, batches, map[int64]history.Hour{t0.UnixMilli(): {Published: 1, Failed: 2}}, 3, now); err != nil {
			t.Fatal(err)
		}
	}
	write("x1", 0) // a fresh server: no script yet
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	write("x2", time.Minute)
	hours, err := s.Hours(ctx, t0, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]history.Hour{{Start: t0.UnixMilli(), Published: 2, Failed: 4, Outbox: 3}}, hours); diff != "" {
		t.Errorf("hours after two writes without the script (-want +got):\n%s", diff)
	}
	for _, feed := range []string{"a", "b"} {
		f, err := s.Feed(ctx, feed)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Items) != 2 || len(f.Items[0].Events) != 1 || len(f.Items[1].Events) != 1 {
			t.Errorf("feed %s after two writes: %+v; want items x1 and x2 of one event each", feed, f.Items)
		}
	}
}
