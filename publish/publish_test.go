package publish_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// TestExactlyOnce walks one feed through its life on both stores: poll 1
// posts every item, poll 2 posts none, an edit is PUT once, and an item
// that leaves the feed and comes back is not posted again.
func TestExactlyOnce(t *testing.T) {
	for _, kind := range []storeKind{onRedis, onBolt} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			p := e.publisher(nil)
			opts := publish.FeedOptions{InitialItems: 100}
			items := stories("news", 8)

			if c := e.accept(p, "news", items, opts); c != (publish.Counts{New: 8}) {
				t.Errorf("poll 1 counts = %+v; want 8 new", c)
			}
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.exactlyOnce(items)
			if n := e.log.count(http.MethodPost, "/v3/story"); n != 8 {
				t.Errorf("poll 1: %d POSTs; want 8", n)
			}

			// Poll 2: nothing new; one store round trip for the whole poll
			// (the gauge refresh poll 1's deliveries scheduled is not its).
			p.WaitStatsRefreshed()
			before := e.log.all()
			var rt int64
			if e.rt != nil {
				rt = e.rt.Count()
			}
			if c := e.accept(p, "news", items, opts); c != (publish.Counts{Duplicate: 8}) {
				t.Errorf("poll 2 counts = %+v; want 8 duplicates", c)
			}
			if e.rt != nil {
				if got := e.rt.Count() - rt; got != 1 {
					t.Errorf("poll 2 cost %d Redis round trips; want 1", got)
				}
			}
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if after := e.log.all(); len(after) != len(before) {
				t.Errorf("poll 2 sent %d requests; want none", len(after)-len(before))
			}

			// An edit: one PUT, to the id of the first POST.
			items[3].Title += " (corrected)"
			items[3] = rehash(items[3])
			if c := e.accept(p, "news", items, opts); c != (publish.Counts{Updated: 1, Duplicate: 7}) {
				t.Errorf("edit counts = %+v; want 1 updated, 7 duplicates", c)
			}
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := e.log.count(http.MethodPut, "/v3/story/"); n != 1 {
				t.Errorf("%d PUTs after one edit; want 1", n)
			}
			e.exactlyOnce(items)
			e.accept(p, "news", items, opts)
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := e.log.count(http.MethodPut, "/v3/story/"); n != 1 {
				t.Errorf("%d PUTs after the edit was seen twice; want 1", n)
			}

			// Item 0 leaves the feed, then comes back.
			if c := e.accept(p, "news", items[1:], opts); c != (publish.Counts{Duplicate: 7}) {
				t.Errorf("poll without item 0 = %+v; want 7 duplicates", c)
			}
			if c := e.accept(p, "news", items, opts); c != (publish.Counts{Duplicate: 8}) {
				t.Errorf("poll with item 0 back = %+v; want 8 duplicates", c)
			}
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := e.log.count(http.MethodPost, "/v3/story"); n != 8 {
				t.Errorf("%d POSTs in all; want 8", n)
			}
			e.exactlyOnce(items)
		})
	}
}

// TestFirstSightAndBackfill checks initial_items and a later backfill.
func TestFirstSightAndBackfill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	p := e.publisher(nil)
	items := stories("blog", 10) // item 0 newest
	// Shuffle the feed order: "newest" goes by date, not position.
	items[0], items[9] = items[9], items[0]
	c := e.accept(p, "blog", items, publish.FeedOptions{InitialItems: 3})
	if c != (publish.Counts{New: 3, Seen: 7}) {
		t.Errorf("first sight counts = %+v; want 3 new, 7 seen", c)
	}
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range e.sb.AllContent() {
		got = append(got, it.ExternalID)
	}
	slices.Sort(got)
	want := []string{items[9].ExternalID, items[1].ExternalID, items[2].ExternalID}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published on first sight (-want +got):\n%s", diff)
	}
	// An item recorded as seen stays unpublished when it changes.
	items[5].Title += " v2"
	items[5] = rehash(items[5])
	if c := e.accept(p, "blog", items, publish.FeedOptions{InitialItems: 3}); c.New != 0 {
		t.Errorf("edit of a seen-only item counts = %+v; want nothing new", c)
	}
	// A new item on a known feed is published whatever InitialItems says.
	items = append(items, story("blog", 10, "blog item 10", day0.Add(100*time.Hour)))
	if c := e.accept(p, "blog", items, publish.FeedOptions{InitialItems: 0}); c != (publish.Counts{New: 1, Duplicate: 10}) {
		t.Errorf("news on a known feed = %+v; want 1 new", c)
	}
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.sb.AllContent()); n != 4 {
		t.Fatalf("%d items on the service; want 4", n)
	}
	v, err := p.Validators(context.Background(), "blog")
	if err != nil || v.ETag == "" {
		t.Fatalf("Validators = %+v, %v; want the last poll's", v, err)
	}
	// Backfill everything published since item 6's date: items 3..6 (item
	// 0, moved to the end of the feed, is the oldest and stays out).
	since := items[6].PublishDate
	c, err = p.Backfill(context.Background(), "blog", items, since, publish.FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.New != 4 {
		t.Errorf("backfill counts = %+v; want 4 new", c)
	}
	if v2, _ := p.Validators(context.Background(), "blog"); v2 != v {
		t.Errorf("backfill changed the validators from %+v to %+v", v, v2)
	}
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.exactlyOnce(append(slices.Clone(items[1:7]), items[9], items[10]))
	if _, err := p.Backfill(context.Background(), "blog", items, time.Time{}, publish.FeedOptions{}); err == nil {
		t.Errorf("Backfill without since succeeded; want an error")
	}
}

// TestCommitThenFail: every POST is applied and answered 500. The
// publisher must look each item up instead of posting it again.
func TestCommitThenFail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{CommitThenFail: 1, Seed: 1})
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.Registerer = reg })
	a, b := stories("alpha", 10), stories("beta", 6)
	e.accept(p, "alpha", a, publish.FeedOptions{InitialItems: 100})
	e.accept(p, "beta", b, publish.FeedOptions{InitialItems: 100})
	e.runUntilEmpty(p, 30*time.Second)
	e.exactlyOnce(a, b)
	if n := e.log.count(http.MethodPost, "/v3/story"); n != 16 {
		t.Errorf("%d POSTs; want 16 (one per item, each answered 500 after its commit)", n)
	}
	if got := metricValue(t, reg, "feedworker_publish_requests_total", map[string]string{"type": "story", "outcome": "recovered"}); got != 16 {
		t.Errorf("recovered = %v; want 16", got)
	}

	// Half of the writes now fail after commit: edits still land once.
	if err := e.sb.SetFaults(sandbox.Faults{CommitThenFail: 0.5, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		a[i].Title += " edited"
		a[i] = rehash(a[i])
	}
	c := e.accept(p, "alpha", a, publish.FeedOptions{InitialItems: 100})
	if c.Updated != 4 {
		t.Errorf("edit counts = %+v; want 4 updated", c)
	}
	e.runUntilEmpty(p, 30*time.Second)
	e.exactlyOnce(a, b)
}

// TestRedisRestart stops the store's Redis mid-run and starts it again:
// nothing lost, nothing doubled, and the publisher resumes by itself.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	srv := dedupeServer(t)
	e := &env{t: t, log: &reqLog{}, store: srv.store}
	e.startSandbox(sandbox.Faults{Latency: 15 * time.Millisecond})
	p := e.publisher(func(o *publish.Options) { o.ClaimTTL = 3 * time.Second; o.SendTimeout = time.Second })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	feeds := map[string][]transform.Payload{}
	for _, f := range []string{"f1", "f2", "f3", "f4"} {
		feeds[f] = stories(f, 12)
	}
	e.accept(p, "f1", feeds["f1"], publish.FeedOptions{InitialItems: 100})
	e.accept(p, "f2", feeds["f2"], publish.FeedOptions{InitialItems: 100})
	// Stop Redis while f1 and f2 are being delivered.
	time.Sleep(60 * time.Millisecond)
	srv.Stop()
	v := dedupe.Validators{ETag: `"down"`}
	if _, err := p.Accept(context.Background(), "f3", feeds["f3"], v, publish.FeedOptions{InitialItems: 100}); err == nil {
		t.Errorf("Accept with Redis down succeeded; want an error (the poller keeps its validators)")
	}
	time.Sleep(1500 * time.Millisecond)
	srv.Start()
	// The poller retries; Redis answers again.
	for _, f := range []string{"f3", "f4"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := p.Accept(context.Background(), f, feeds[f], v, publish.FeedOptions{InitialItems: 100})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Accept(%s) after restart: %v", f, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := p.Stats(context.Background())
		if err == nil && st.Outbox == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not drained after the restart: %+v, %v", st, err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	cancel()
	<-done
	e.exactlyOnce(feeds["f1"], feeds["f2"], feeds["f3"], feeds["f4"])
	if got, ok, err := e.store.Validators(context.Background(), "f3"); err != nil || !ok || got != v {
		t.Errorf("f3 validators = %+v, %v, %v; want %+v", got, ok, err, v)
	}
}

// Test429Storm: the sandbox answers 429 above a low rate. Every item is
// delivered once, and after a 429 no request starts before its
// Retry-After has passed.
func Test429Storm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{RateLimit: 40, RateBurst: 6})
	p := e.publisher(nil)
	items := stories("busy", 30)
	e.accept(p, "busy", items, publish.FeedOptions{InitialItems: 100})
	e.runUntilEmpty(p, 40*time.Second)
	e.exactlyOnce(items)

	reqs := e.log.all()
	var limited []logged
	for _, r := range reqs {
		if r.status == http.StatusTooManyRequests {
			limited = append(limited, r)
		}
	}
	if len(limited) == 0 {
		t.Fatalf("no 429 in %d requests; the storm did not happen", len(reqs))
	}
	// Requests already past the gate when a 429 arrived may start a moment
	// later; none may start well inside the Retry-After window.
	const slack = 150 * time.Millisecond
	for _, l := range limited {
		ra, err := time.ParseDuration(l.retryAfter + "s")
		if err != nil || ra <= 0 {
			t.Fatalf("429 without a usable Retry-After %q", l.retryAfter)
		}
		for _, r := range reqs {
			if r.start.After(l.end.Add(slack)) && r.start.Before(l.end.Add(ra-slack)) {
				t.Errorf("%s %s started %v after a 429 with Retry-After %v", r.method, r.path, r.start.Sub(l.end), ra)
			}
		}
	}
	if len(limited) > len(items) {
		t.Errorf("%d 429s for %d items; the publisher kept hammering", len(limited), len(items))
	}
}

// TestDeadLetters: a 400 dead-letters the item with the API's reason; a
// retry after the cause is fixed delivers it.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.Registerer = reg })
	ctx := context.Background()
	items := stories("seg", 3)
	// Segment 1 does not exist yet: the sandbox answers 400.
	items[1].Segments = []int64{1}
	items[1] = rehash(items[1])
	items[2].Segments = []int64{1}
	items[2] = rehash(items[2])
	e.accept(p, "seg", items, publish.FeedOptions{InitialItems: 100})
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	dl, err := p.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 2 {
		t.Fatalf("dead letters = %+v; want 2", dl)
	}
	for _, d := range dl {
		if d.Status != 400 || !strings.Contains(d.Reason, "segment") || d.Type != "story" || d.Title == "" || d.Attempts != 1 {
			t.Errorf("dead letter %+v; want status 400, a reason naming the segment, type and title", d)
		}
	}
	if got := metricValue(t, reg, "feedworker_dead_letters", nil); got != 2 {
		t.Errorf("feedworker_dead_letters = %v; want 2", got)
	}
	if err := p.RetryDeadLetter(ctx, "seg/nope"); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("RetryDeadLetter(unknown) = %v; want ErrNotFound", err)
	}
	// Fix the cause, then retry one, then all.
	if _, _, err := e.acs.Segments.Create(ctx, &acs.SegmentCreate{Description: "readers"}); err != nil {
		t.Fatal(err)
	}
	if err := p.RetryDeadLetter(ctx, dl[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if dl, _ := p.DeadLetters(ctx); len(dl) != 1 {
		t.Errorf("dead letters after one retry = %d; want 1", len(dl))
	}
	if n, err := p.RetryDeadLetters(ctx); err != nil || n != 1 {
		t.Errorf("RetryDeadLetters = %d, %v; want 1", n, err)
	}
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	e.exactlyOnce(items)
	st, err := p.Stats(ctx)
	if err != nil || st != (dedupe.Stats{}) {
		t.Errorf("Stats = %+v, %v; want empty", st, err)
	}
}

// TestUpdateNotFound: content deleted on the service is left alone, or
// created again when the feed says so.
func TestUpdateNotFound(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		name := map[bool]string{false: "removed", true: "recreated"}[recreate]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, onRedis, sandbox.Faults{})
			p := e.publisher(nil)
			ctx := context.Background()
			opts := publish.FeedOptions{InitialItems: 100, RecreateDeleted: recreate}
			items := stories("del", 2)
			e.accept(p, "del", items, opts)
			if err := p.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			victim := e.sb.ItemsByExternalID(items[0].ExternalID)[0]
			if _, err := e.acs.Stories.Delete(ctx, victim.ID); err != nil {
				t.Fatal(err)
			}
			items[0].Title += " edited"
			items[0] = rehash(items[0])
			e.accept(p, "del", items, opts)
			if err := p.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			got := e.sb.ItemsByExternalID(items[0].ExternalID)
			if !recreate {
				if len(got) != 0 {
					t.Fatalf("deleted item came back: %+v", got)
				}
				// Left alone for good, even when edited again.
				items[0].Title += " again"
				items[0] = rehash(items[0])
				e.accept(p, "del", items, opts)
				if err := p.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				if got := e.sb.ItemsByExternalID(items[0].ExternalID); len(got) != 0 {
					t.Errorf("removed item re-created after a later edit: %+v", got)
				}
				if st, _ := p.Stats(ctx); st != (dedupe.Stats{}) {
					t.Errorf("Stats = %+v; want empty (no dead letter for a removed item)", st)
				}
				return
			}
			if len(got) != 1 || got[0].ID == victim.ID || got[0].Title != items[0].Title {
				t.Fatalf("after 404 with recreate: %+v; want one new item titled %q", got, items[0].Title)
			}
			e.exactlyOnce(items)
		})
	}
}

// TestCategories resolves names to ids, drops unknown ones unless the feed
// may create them, and creates a name once.
func TestCategories(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	p := e.publisher(nil)
	ctx := context.Background()
	news, _, err := e.acs.Categories.Create(ctx, &acs.CategoryCreate{Description: "News"})
	if err != nil {
		t.Fatal(err)
	}
	closed := stories("closed", 2)
	open := stories("open", 5)
	for i := range closed {
		closed[i].CategoryNames = []string{" news ", "Sports"}
		closed[i] = rehash(closed[i])
	}
	for i := range open {
		open[i].CategoryNames = []string{"NEWS", "Sports"}
		open[i] = rehash(open[i])
	}
	// The closed feed first: once "Sports" exists, its items would get it
	// too, rightly (the flag only forbids creating).
	e.accept(p, "closed", closed, publish.FeedOptions{InitialItems: 100})
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	e.accept(p, "open", open, publish.FeedOptions{InitialItems: 100, CreateCategories: true})
	e.runUntilEmpty(p, 20*time.Second)

	cats := map[string]int64{}
	for c, err := range e.acs.Categories.All(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := cats[c.Description]; dup {
			t.Errorf("category %q created twice", c.Description)
		}
		cats[c.Description] = c.ID
	}
	if len(cats) != 2 || cats["Sports"] == 0 {
		t.Fatalf("categories = %v; want News and one Sports", cats)
	}
	check := func(items []transform.Payload, want []int64) {
		t.Helper()
		for _, it := range items {
			got := e.sb.ItemsByExternalID(it.ExternalID)
			if len(got) != 1 {
				t.Fatalf("%s: %d copies", it.ExternalID, len(got))
			}
			content, _, err := e.acs.Content.Get(ctx, got[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range content.Categories {
				ids = append(ids, r.ID)
			}
			slices.Sort(ids)
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("%s categories (-want +got):\n%s", it.ExternalID, diff)
			}
		}
	}
	check(closed, []int64{news.ID})
	check(open, []int64{news.ID, cats["Sports"]})
}

// TestShutdown: a send in flight when Run is cancelled finishes and is
// recorded; a send cut off by a too-short grace is not doubled later.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{{"within grace", 3 * time.Second}, {"grace too short", 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, onRedis, sandbox.Faults{Latency: 400 * time.Millisecond})
			e.log.started = make(chan string, 16)
			p := e.publisher(func(o *publish.Options) { o.ShutdownGrace = tc.grace; o.Workers = 1 })
			items := stories("slow", 1)
			e.accept(p, "slow", items, publish.FeedOptions{InitialItems: 100})
			cancel, done := e.runUntilPosts(p, 1)
			start := time.Now()
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			took := time.Since(start)
			if took > tc.grace+time.Second {
				t.Errorf("Run returned %v after cancel; want within the %v grace", took, tc.grace)
			}
			if tc.grace > time.Second {
				r, ok, err := e.store.Record(context.Background(), dedupe.Key{FeedID: "slow", ExternalID: items[0].ExternalID})
				if err != nil || !ok || r.ContentID == 0 || r.PendingHash != "" {
					t.Errorf("record after a graceful stop = %+v, %v, %v; want delivered, not pending", r, ok, err)
				}
				e.exactlyOnce(items)
				return
			}
			// Cut off: the next process must not post it twice.
			time.Sleep(500 * time.Millisecond) // the server finishes what it started
			p2 := e.publisher(func(o *publish.Options) { o.ClaimTTL = 2 * time.Second; o.SendTimeout = time.Second })
			e.runUntilEmpty(p2, 20*time.Second)
			e.exactlyOnce(items)
		})
	}
}

// TestTypes creates and updates one item of each type through the strict
// sandbox, which refuses any field a type lacks.
func TestTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	p := e.publisher(nil)
	yes, qty, tz := true, 3, int64(1)
	base := func(i int, typ string) transform.Payload {
		pl := story("types", i, typ+" item", day0)
		pl.Type = typ
		pl.ExpirationDate = day0.Add(48 * time.Hour)
		pl.PriorityUntil = day0.Add(24 * time.Hour)
		pl.Evergreen, pl.EnableComments = &yes, &yes
		pl.MoreButtonText = "Read"
		return pl
	}
	ev := base(1, transform.TypeEvent)
	ev.Event = &transform.Event{Start: day0, End: day0.Add(time.Hour), AllDay: &yes, Location: "Hall", City: "Lyon", TimeZoneID: &tz, RegistrationURL: "https://example.com/r"}
	need := base(2, transform.TypeNeed)
	need.Need = &transform.Need{Quantity: &qty, ByDate: day0.Add(72 * time.Hour)}
	items := []transform.Payload{rehash(base(0, transform.TypeStory)), rehash(ev), rehash(need), rehash(base(3, transform.TypeLink))}
	e.accept(p, "types", items, publish.FeedOptions{InitialItems: 100})
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dl, _ := p.DeadLetters(context.Background()); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
	for i := range items {
		items[i].Title += " v2"
		items[i] = rehash(items[i])
	}
	e.accept(p, "types", items, publish.FeedOptions{InitialItems: 100})
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dl, _ := p.DeadLetters(context.Background()); len(dl) != 0 {
		t.Fatalf("dead letters after updates: %+v", dl)
	}
	e.exactlyOnce(items)
	for _, it := range items {
		got := e.sb.ItemsByExternalID(it.ExternalID)[0]
		if got.Type != it.Type {
			t.Errorf("%s: type %q; want %q", it.ExternalID, got.Type, it.Type)
		}
		js := string(got.JSON)
		hasURL := strings.Contains(js, `"external_url"`)
		if wantURL := it.Type != transform.TypeStory; hasURL != wantURL {
			t.Errorf("%s (%s): external_url present %v; want %v: %s", it.ExternalID, it.Type, hasURL, wantURL, js)
		}
		if it.Type == transform.TypeEvent && strings.Contains(js, `"publish_date_utc"`) {
			t.Errorf("event carries publish_date_utc: %s", js)
		}
	}
}

// TestAcceptDropsInvalid: items the publisher cannot keep are dropped,
// not allowed to block their feed.
func TestAcceptDropsInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onBolt, sandbox.Faults{})
	p := e.publisher(nil)
	items := stories("x", 3)
	bad := items[2]
	bad.Type = "podcast"
	dup := items[0]
	noHash := items[1]
	noHash.Hash = ""
	c := e.accept(p, "x", []transform.Payload{items[0], items[1], bad, dup, noHash}, publish.FeedOptions{InitialItems: 10})
	if c != (publish.Counts{New: 2, Dropped: 3}) {
		t.Errorf("counts = %+v; want 2 new, 3 dropped", c)
	}
}

func metricValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestDrainStoreDown: with the store unreachable, Drain reports it rather
// than hanging, and nothing is sent.
func TestDrainStoreDown(t *testing.T) {
	t.Parallel()
	srv := dedupeServer(t)
	e := &env{t: t, log: &reqLog{}, store: srv.store}
	e.startSandbox(sandbox.Faults{})
	p := e.publisher(nil)
	e.accept(p, "down", stories("down", 2), publish.FeedOptions{InitialItems: 10})
	before := len(e.log.all()) // first sight looked the feed up
	srv.Stop()
	start := time.Now()
	err := p.Drain(context.Background())
	if err == nil {
		t.Fatalf("Drain with Redis down = nil; want the store's error")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Drain took %v to give up; want a few seconds", took)
	}
	if n := len(e.log.all()) - before; n != 0 {
		t.Errorf("%d API requests with the store down; want none", n)
	}
}
