package dedupe

import (
	"slices"
	"testing"
	"time"
)

// TestSettleKeysMadeOnce: the keys made once per partition are the ones
// the store names its outbox and tags by.
func TestSettleKeysMadeOnce(t *testing.T) {
	for _, parts := range []int{1, 16, 100} {
		r := NewRedis(nil, RedisOptions{Prefix: "fw:", Partitions: parts})
		for p := range parts {
			if got, want := r.l.tag(p), "fw:"+r.l.tags[p]; got != want {
				t.Errorf("tag(%d) = %q; want %q", p, got, want)
			}
			want := []string{"fw:" + r.l.tags[p] + "q:due", "fw:" + r.l.tags[p] + "q:dead", "fw:" + r.l.tags[p] + "q:data", "fw:" + r.l.tags[p] + "q:meta", "fw:" + r.l.tags[p] + "q:run"}
			if !slices.Equal(r.settleKeys[p], want) {
				t.Errorf("settle keys of partition %d = %q; want %q", p, r.settleKeys[p], want)
			}
		}
		feed := "farm-123"
		keys, _, _, err := r.claimOpArgs(ClaimOp{Key: Key{FeedID: feed, ExternalID: "x"}, Owner: "o", TTL: time.Second}, time.Now())
		if err != nil || keys[0] != r.qKey(feed, "due") || keys[4] != r.qKey(feed, "run") {
			t.Errorf("claimOpArgs keys = %q, %v; want the feed's partition's", keys, err)
		}
	}
}

// BenchmarkClaimOpArgs is what building one delivery's settle call costs
// the worker.
//
//	go test -run '^$' -bench ClaimOpArgs -benchmem ./dedupe/
func BenchmarkClaimOpArgs(b *testing.B) {
	r := NewRedis(nil, RedisOptions{})
	s := Settlement{Kind: Delivered, ContentID: 12345, Type: "story", Hash: "abcdefabcdef"}
	op := ClaimOp{Key: Key{FeedID: "farm-123", ExternalID: "fw1-8a55a60c210597345e3c"}, Owner: "host/123/456#7", Settle: &s}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := r.claimOpArgs(op, now); err != nil {
			b.Fatal(err)
		}
	}
}
