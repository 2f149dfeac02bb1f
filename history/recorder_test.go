package history_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/history"
)

// TestRecorderNeverFailsItsCallers: recording only appends to memory, up
// to its bound (beyond it records are dropped and counted); a write that
// fails (here Redis does not answer) is counted and the records dropped,
// and no caller ever sees an error.
func TestRecorderNeverFailsItsCallers(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	r := history.NewRecorder(history.NewRedis(c, "x:", history.Limits{}), history.RecorderOptions{Registerer: reg, MaxPending: 3})
	r.Poll("a", history.Poll{At: ms(0), Result: "ok"})
	r.Items("a", []history.Update{{ID: "1", Event: history.Event{Kind: history.Published, At: ms(0)}}, {ID: "2", Event: history.Event{Kind: history.Queued, At: ms(0)}}})
	r.Items("b", []history.Update{{ID: "3", Event: history.Event{Kind: history.Queued, At: ms(0)}}, {ID: "4", Event: history.Event{Kind: history.Queued, At: ms(0)}}})
	r.Flush(t.Context())
	want := `
# HELP feedworker_history_dropped_total History records (item fates and polls) not kept, by reason: full (too many waiting for a write), error (the write failed).
# TYPE feedworker_history_dropped_total counter
feedworker_history_dropped_total{reason="error"} 3
feedworker_history_dropped_total{reason="full"} 2
# HELP feedworker_history_writes_total History writes (one store round trip each) by result (ok, error).
# TYPE feedworker_history_writes_total counter
feedworker_history_writes_total{result="error"} 1
feedworker_history_writes_total{result="ok"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// countingStore is a Store whose writes count records and report each
// write on wrote.
type countingStore struct {
	history.Store
	wrote chan int
}

func (s countingStore) Write(_ context.Context, batches []history.Batch, _ map[int64]history.Hour, _ int, _ time.Time) error {
	n := 0
	for _, b := range batches {
		n += len(b.Items) + len(b.Polls)
	}
	s.wrote <- n
	return nil
}

// TestRecorderWritesWhenManyWait: once a quarter of MaxPending waits, Run
// writes without waiting for FlushEvery (an hour here), so a pass that
// records more than MaxPending in all, in steps the writes keep up with,
// loses none.
func TestRecorderWritesWhenManyWait(t *testing.T) {
	t.Parallel()
	st := countingStore{wrote: make(chan int, 1)}
	reg := prometheus.NewPedanticRegistry()
	r := history.NewRecorder(st, history.RecorderOptions{Registerer: reg, MaxPending: 8, FlushEvery: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	// Waits end at the test binary's deadline, not at a guessed time.
	wait := t.Context()
	if dl, ok := t.Deadline(); ok {
		var stop context.CancelFunc
		wait, stop = context.WithDeadline(wait, dl.Add(-time.Second))
		defer stop()
	}
	written := 0
	for step := range 5 {
		// Two records: a quarter of the bound.
		r.Items("a", []history.Update{{ID: fmt.Sprint(step), Event: history.Event{Kind: history.Queued, At: ms(0)}},
			{ID: fmt.Sprint(step), Event: history.Event{Kind: history.Published, At: ms(0)}}})
		select {
		case n := <-st.wrote:
			written += n
		case <-wait.Done():
			t.Fatalf("step %d: no write before the test's deadline", step)
		}
	}
	cancel()
	<-done
	if written != 10 {
		t.Errorf("%d records written, want 10", written)
	}
	want := `
# HELP feedworker_history_dropped_total History records (item fates and polls) not kept, by reason: full (too many waiting for a write), error (the write failed).
# TYPE feedworker_history_dropped_total counter
feedworker_history_dropped_total{reason="error"} 0
feedworker_history_dropped_total{reason="full"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "feedworker_history_dropped_total"); err != nil {
		t.Error(err)
	}
}

// TestRecorderKeepsAnItemsEventsInTimeOrder: a sender may record an item's
// delivery before Accept records that it queued the change (Accept's time
// is the earlier); the item's history still reads changed, then updated.
func TestRecorderKeepsAnItemsEventsInTimeOrder(t *testing.T) {
	t.Parallel()
	store := history.NewBolt(openBolt(t), history.Limits{})
	r := history.NewRecorder(store, history.RecorderOptions{})
	r.Items("a", []history.Update{{ID: "1", Seen: true, Event: history.Event{Kind: history.Queued, At: ms(0)}}})
	r.Items("a", []history.Update{{ID: "1", Event: history.Event{Kind: history.Published, At: ms(time.Second)}}})
	r.Items("a", []history.Update{{ID: "1", Event: history.Event{Kind: history.Updated, At: ms(3 * time.Second)}}})
	r.Items("a", []history.Update{{ID: "1", Seen: true, Event: history.Event{Kind: history.Changed, At: ms(2 * time.Second), Fields: []string{"title"}}}})
	r.Flush(t.Context())
	f, err := store.Feed(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Items) != 1 {
		t.Fatalf("items %+v, want one", f.Items)
	}
	var kinds []history.Kind
	for _, e := range f.Items[0].Events {
		kinds = append(kinds, e.Kind)
	}
	if want := []history.Kind{history.Queued, history.Published, history.Changed, history.Updated}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}
