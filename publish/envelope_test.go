package publish_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/sandbox"
)

// An outbox entry queued by a worker of an earlier version (the envelope
// as one JSON document, version 1, the body HTML-escaped as json.Marshal
// wrote it) is still delivered, once, with its body and dates.
func TestOutboxVersion1EntryDelivered(t *testing.T) {
	const v1 = `{"v":1,"payload":{"type":"story","feed_id":"old","external_id":"fw1-old-001",` +
		`"title":"Queued \u003cbefore\u003e the upgrade","summary":"s \u0026 t",` +
		`"body":"\u003cp\u003eline one\u003c/p\u003e\n\u003cp\u003eline \"two\"\u003c/p\u003e",` +
		`"publish_date":"2026-02-01T08:00:00Z","hash":"h1"},"dates":{"expire_after":86400000000000}}`
	for _, kind := range []storeKind{onRedis, onBolt} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			ctx := context.Background()
			ch := []dedupe.Change{{ExternalID: "fw1-old-001", Hash: "h1", Type: "story", Action: dedupe.ActionPublish, Data: []byte(v1)}}
			out, err := e.store.Commit(ctx, "old", ch, &dedupe.Validators{ETag: `"1"`}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || out[0] != dedupe.OutcomeNew {
				t.Fatalf("Commit outcomes = %q; want one new", out)
			}
			p := e.publisher(nil)
			if err := p.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			items := e.sb.ItemsByExternalID("fw1-old-001")
			if len(items) != 1 {
				t.Fatalf("%d items on the service; want 1", len(items))
			}
			if n := e.log.count(http.MethodPost, "/v3/story"); n != 1 {
				t.Errorf("%d POSTs; want 1", n)
			}
			var got struct {
				Title          string `json:"title"`
				Summary        string `json:"summary"`
				Body           string `json:"body"`
				PublishDate    string `json:"publish_date_utc"`
				ExpirationDate string `json:"expiration_date_utc"`
			}
			if err := json.Unmarshal(items[0].JSON, &got); err != nil {
				t.Fatal(err)
			}
			want := "<p>line one</p>\n<p>line \"two\"</p>"
			if got.Title != "Queued <before> the upgrade" || got.Summary != "s & t" || got.Body != want {
				t.Errorf("sent title %q, summary %q, body %q; want the entry's", got.Title, got.Summary, got.Body)
			}
			if got.PublishDate == "" || got.ExpirationDate == "" || got.PublishDate == got.ExpirationDate {
				t.Errorf("publish date %q, expiration %q; want both, a day apart", got.PublishDate, got.ExpirationDate)
			}
			dl, err := p.DeadLetters(ctx)
			if err != nil || len(dl) != 0 {
				t.Errorf("dead letters %+v, %v; want none", dl, err)
			}
		})
	}
}
