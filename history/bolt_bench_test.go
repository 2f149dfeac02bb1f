package history_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/internal/cputime"
)

// firstPass is the history of a first pass over feeds × items as the
// recorder hands it to the store, flush by flush: each flush carries the
// polls and queued items of a slice of the feeds and the deliveries of the
// slice before it (the publisher is about one flush behind the poller).
func firstPass(feeds, items, flushes int) [][]history.Batch {
	per := (feeds + flushes - 1) / flushes
	queued := func(f int) history.Batch {
		feed := fmt.Sprintf("feed-%04d", f)
		at := ms(time.Duration(f) * time.Millisecond)
		b := history.Batch{Feed: feed, Polls: []history.Poll{{At: at, Result: "ok", StatusCode: 200, DurationMS: 12, Bytes: 31000, Items: items, New: items,
			ETag: `W/"5f3c-1a2b3c4d5e6f"`, LastModified: "Tue, 25 Nov 2026 10:00:00 GMT"}}}
		for i := range items {
			var dg history.Digest
			for fl := history.FieldType; fl <= history.FieldNeed; fl++ {
				dg.Set(fl, uint32(f*7919+i*31+int(fl)))
			}
			b.Items = append(b.Items, history.Update{ID: fmt.Sprintf("%016x", uint64(f)*0x9e3779b97f4a7c15+uint64(i)*0xbf58476d1ce4e5b9),
				Title: "An item of the bench's farm, " + strings.Repeat("t", 40), Link: fmt.Sprintf("https://farm.example/%d/%d", f, i),
				GUID: fmt.Sprintf("https://farm.example/%d/%d", f, i), Seen: true, Digest: dg,
				Event: history.Event{Kind: history.Queued, At: at}})
		}
		return b
	}
	var out [][]history.Batch
	for k := 0; k <= flushes; k++ {
		var flush []history.Batch
		for f := k * per; f < min((k+1)*per, feeds); f++ {
			flush = append(flush, queued(f))
		}
		for f := (k - 1) * per; k > 0 && f < min(k*per, feeds); f++ {
			q := queued(f)
			b := history.Batch{Feed: q.Feed}
			for i, u := range q.Items {
				b.Items = append(b.Items, history.Update{ID: u.ID, Event: history.Event{Kind: history.Published, At: u.Event.At + 900, ContentID: int64(f*items + i + 1)}})
			}
			flush = append(flush, b)
		}
		out = append(out, flush)
	}
	return out
}

// BenchmarkBoltFirstPass writes a first pass of 1,000 feeds × 20 items to
// the bbolt history in 7 flushes, as the worker's recorder does at the
// bench's pace, into a file opened as the embedded store opens its own.
func BenchmarkBoltFirstPass(b *testing.B) {
	pass := firstPass(1000, 20, 7)
	cpu0 := cputime.Self()
	for b.Loop() {
		b.StopTimer()
		db, err := bolt.Open(filepath.Join(b.TempDir(), "h.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		if err != nil {
			b.Fatal(err)
		}
		s := history.NewBolt(db, history.Limits{})
		b.StartTimer()
		for _, flush := range pass {
			if err := s.Write(b.Context(), flush, nil, -1, t0); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	// The process's CPU, not the wall: the commits' fsyncs wait on a disk
	// that others share. It includes the opens and closes left out of
	// the timer, and the collector.
	b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
}
