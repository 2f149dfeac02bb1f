package publish_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// TestRollingUpgradeRefusalRequeued: during a rolling upgrade a replica of
// the previous version claims a version 2 outbox entry, cannot read it and
// dead-letters it (with the words it has always used) without sending
// anything. A worker of this version re-queues it on its own and delivers
// it once; a dead letter it cannot read either stays where it is.
func TestRollingUpgradeRefusalRequeued(t *testing.T) {
	const v2 = `{"v":2,"payload":{"type":"story","feed_id":"up","external_id":"fw1-up-001","title":"Queued by the new version",` +
		`"publish_date":"2026-02-01T08:00:00Z","hash":"h1"}}` + "\n<p>body</p>"
	const damaged = `{"v":2,"payload":` // a dead letter nobody can read
	for _, kind := range []storeKind{onRedis, onBolt} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			ctx := context.Background()
			ch := []dedupe.Change{
				{ExternalID: "fw1-up-001", Hash: "h1", Type: "story", Action: dedupe.ActionPublish, Data: []byte(v2)},
				{ExternalID: "fw1-up-002", Hash: "h2", Type: "story", Action: dedupe.ActionPublish, Data: []byte(damaged)},
			}
			if _, err := e.store.Commit(ctx, "up", ch, &dedupe.Validators{ETag: `"1"`}, time.Now()); err != nil {
				t.Fatal(err)
			}
			// The old replica: claims both and refuses them as it did.
			claimed, _, err := e.store.Claim(ctx, "old-replica", 10, time.Minute, time.Now())
			if err != nil || len(claimed) != 2 {
				t.Fatalf("claimed %d, %v; want 2", len(claimed), err)
			}
			for _, c := range claimed {
				s := dedupe.Settlement{Kind: dedupe.Dead, Reason: "undecodable outbox entry: invalid character '<' after top-level value"}
				if _, err := e.store.Settle(ctx, c.Key, "old-replica", s, time.Now()); err != nil {
					t.Fatal(err)
				}
			}

			p := e.publisher(func(o *publish.Options) { o.StatsInterval = 50 * time.Millisecond })
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- p.Run(rctx) }()
			// An open console reads the stats more often than the
			// interval: the look must not wait for a quiet moment.
			go func() {
				for rctx.Err() == nil {
					_, _ = p.Stats(rctx)
					time.Sleep(10 * time.Millisecond)
				}
			}()
			deadline := time.Now().Add(30 * time.Second)
			for len(e.sb.ItemsByExternalID("fw1-up-001")) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if n := len(e.sb.ItemsByExternalID("fw1-up-001")); n != 1 {
				t.Fatalf("%d items on the service for the refused entry; want 1", n)
			}
			if n := e.log.count(http.MethodPost, "/v3/story"); n != 1 {
				t.Errorf("%d POSTs; want 1", n)
			}
			dl, err := p.DeadLetters(ctx)
			if err != nil || len(dl) != 1 || dl[0].ExternalID != "fw1-up-002" || !strings.HasPrefix(dl[0].Reason, "undecodable outbox entry") {
				t.Errorf("dead letters %+v, %v; want only the damaged entry, still refused", dl, err)
			}
		})
	}
}
