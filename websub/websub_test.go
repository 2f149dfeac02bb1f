package websub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/internal/websubhub"
)

// deliveries records what the subscriber hands on.
type deliveries struct {
	mu     sync.Mutex
	bodies map[string][]string // feed → bodies
}

func (d *deliveries) deliver(_ context.Context, feedID string, body []byte, _ string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bodies[feedID] = append(d.bodies[feedID], string(body))
	return nil
}

func (d *deliveries) of(feedID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.bodies[feedID]...)
}

// replica is one process's subscriber with its callback server.
type replica struct {
	sub *Subscriber
	srv *httptest.Server
	reg *prometheus.Registry
}

func openStore(t *testing.T) dedupe.Store {
	t.Helper()
	s, err := dedupe.OpenBolt(filepath.Join(t.TempDir(), "store.db"), dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newReplica starts a subscriber whose public URL is its own callback
// server, or publicURL when not empty.
func newReplica(t *testing.T, store dedupe.Store, d *deliveries, publicURL string, o Options) *replica {
	t.Helper()
	r := &replica{reg: prometheus.NewPedanticRegistry()}
	mux := http.NewServeMux()
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	o.Store, o.Deliver, o.Registerer = store, d.deliver, r.reg
	o.PublicURL = publicURL
	if o.PublicURL == "" {
		o.PublicURL = r.srv.URL + "/websub"
	}
	sub, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.sub = sub
	mux.Handle("/", sub.Handler())
	return r
}

const topic = "https://news.example.org/feed.atom"

// TestSubscribeVerifyDeliver: a subscription is verified for the topic
// asked, signed content is delivered, unsigned and forged content is not,
// and verification requests nobody asked for are refused.
func TestSubscribeVerifyDeliver(t *testing.T) {
	t.Parallel()
	hub := websubhub.New(t)
	d := &deliveries{bodies: map[string][]string{}}
	r := newReplica(t, openStore(t), d, "", Options{Lease: 48 * time.Hour})
	ctx := t.Context()
	cb := r.sub.Callback("news")

	if err := r.sub.Ensure(ctx, "news", hub.URL, topic); err != nil {
		t.Fatal(err)
	}
	websubhub.WaitFor(t, "the hub's verification", func() bool { return hub.Sub(cb).Verified == 1 })
	reqs := hub.Requests("subscribe")
	if len(reqs) != 1 || reqs[0].Lease != 48*3600 || reqs[0].Topic != topic || len(reqs[0].Secret) != 64 {
		t.Fatalf("subscribe requests %+v, want one for the topic with lease 172800 and a 32-byte secret", reqs)
	}
	if !r.sub.Active(ctx, "news") {
		t.Errorf("not active after verification")
	}
	// Ensure again: the lease runs, nothing is asked.
	if err := r.sub.Ensure(ctx, "news", hub.URL, topic); err != nil || len(hub.Requests("subscribe")) != 1 {
		t.Errorf("second Ensure: %v, %d requests; want none new", err, len(hub.Requests("subscribe")))
	}

	secret := hub.Sub(cb).Secret
	if code := hub.Push(cb, secret, "<feed>one</feed>"); code != http.StatusNoContent {
		t.Errorf("signed push answered %d, want 204", code)
	}
	if code := hub.Push(cb, "", "<feed>unsigned</feed>"); code != http.StatusAccepted {
		t.Errorf("unsigned push answered %d, want 202 (acknowledged, dropped)", code)
	}
	if code := hub.Push(cb, "not-the-secret", "<feed>forged</feed>"); code != http.StatusAccepted {
		t.Errorf("forged push answered %d, want 202 (acknowledged, dropped)", code)
	}
	if got := d.of("news"); len(got) != 1 || got[0] != "<feed>one</feed>" {
		t.Errorf("delivered %q, want only the signed body", got)
	}
	if code := hub.Push(r.sub.Callback("other"), secret, "<feed/>"); code != http.StatusGone {
		t.Errorf("push for a feed without subscription answered %d, want 410", code)
	}
	for result, want := range map[string]float64{"ok": 1, "unsigned": 1, "bad_signature": 1, "unknown": 1} {
		if got := testutil.ToFloat64(r.sub.m.deliveries.WithLabelValues(result)); got != want {
			t.Errorf("deliveries{result=%q} = %v, want %v", result, got, want)
		}
	}

	// Verifications nobody asked for: another topic, an unsubscribe.
	for _, q := range []string{
		"hub.mode=subscribe&hub.topic=https%3A%2F%2Fevil.example%2F&hub.challenge=x&hub.lease_seconds=60",
		"hub.mode=unsubscribe&hub.topic=" + strings.ReplaceAll(topic, ":", "%3A") + "&hub.challenge=x",
	} {
		resp, err := http.Get(cb + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("unasked verification %s answered %d, want 404", q, resp.StatusCode)
		}
	}
	if !r.sub.Active(ctx, "news") {
		t.Errorf("an unasked verification changed the subscription")
	}
}

// TestRenewBeforeLeaseEnds: a hub that grants a short lease sees the
// subscription renewed, with the same secret, before it lapses.
func TestRenewBeforeLeaseEnds(t *testing.T) {
	t.Parallel()
	hub := websubhub.New(t)
	hub.Grant = 3
	d := &deliveries{bodies: map[string][]string{}}
	r := newReplica(t, openStore(t), d, "", Options{CheckEvery: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := r.sub.SetFeeds(ctx, []string{"news"}); err != nil {
		t.Fatal(err)
	}
	if err := r.sub.Ensure(ctx, "news", hub.URL, topic); err != nil {
		t.Fatal(err)
	}
	cb := r.sub.Callback("news")
	websubhub.WaitFor(t, "the first verification", func() bool { return hub.Sub(cb).Verified == 1 })
	go r.sub.Run(ctx)
	websubhub.WaitFor(t, "a renewal", func() bool { return hub.Sub(cb).Verified >= 2 })
	reqs := hub.Requests("subscribe")
	if reqs[0].Secret != reqs[1].Secret {
		t.Errorf("the renewal changed the secret")
	}
	if !r.sub.Active(ctx, "news") {
		t.Errorf("not active after the renewal")
	}
	websubhub.WaitFor(t, "the gauge", func() bool { return testutil.ToFloat64(r.sub.m.subs.WithLabelValues("active")) == 1 })
}

// TestReplicasShareOneSubscription: what one replica asked for, another
// replica's callback verifies and receives; a feed that leaves the config
// is unsubscribed, even by a replica that did not subscribe it.
func TestReplicasShareOneSubscription(t *testing.T) {
	t.Parallel()
	hub := websubhub.New(t)
	store := openStore(t)
	dB := &deliveries{bodies: map[string][]string{}}
	b := newReplica(t, store, dB, "", Options{Owner: "b"})
	// Replica A's public URL is the load balancer, which sends this
	// hub's calls to B.
	a := newReplica(t, store, &deliveries{bodies: map[string][]string{}}, b.srv.URL+"/websub", Options{Owner: "a"})
	ctx := t.Context()
	if err := a.sub.Ensure(ctx, "news", hub.URL, topic); err != nil {
		t.Fatal(err)
	}
	cb := a.sub.Callback("news")
	websubhub.WaitFor(t, "verification through replica B", func() bool { return hub.Sub(cb).Verified == 1 })
	// B does not subscribe again: the state is shared.
	if err := b.sub.Ensure(ctx, "news", hub.URL, topic); err != nil || len(hub.Requests("subscribe")) != 1 {
		t.Errorf("replica B's Ensure: %v, %d subscribe requests; want 1", err, len(hub.Requests("subscribe")))
	}
	if code := hub.Push(cb, hub.Sub(cb).Secret, "<feed>x</feed>"); code != http.StatusNoContent || len(dB.of("news")) != 1 {
		t.Errorf("push through B: %d, delivered %q", code, dB.of("news"))
	}

	// The feed leaves the config; B (a restarted process, say) unsubscribes.
	if err := b.sub.SetFeeds(ctx, []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	if reqs := hub.Requests("unsubscribe"); len(reqs) != 1 || reqs[0].Callback != cb {
		t.Fatalf("unsubscribe requests %+v, want one for %s", reqs, cb)
	}
	websubhub.WaitFor(t, "the unsubscribe verification", func() bool { s := hub.Sub(cb); return s.Verified == 2 && !s.Active })
	if a.sub.Active(ctx, "news") {
		t.Errorf("still active after unsubscribing")
	}
	if code := hub.Push(cb, hub.Sub(cb).Secret, "<feed>late</feed>"); code != http.StatusGone {
		t.Errorf("push after unsubscribing answered %d, want 410", code)
	}
	if err := b.sub.SetFeeds(ctx, []string{"weather"}); err != nil || len(hub.Requests("unsubscribe")) != 1 {
		t.Errorf("second SetFeeds: %v; want no new unsubscribe", err)
	}
}
