package history_test

import (
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
