package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// childEnv marks the test binary started as the bench's worker process.
const childEnv = "FEEDWORKER_BENCH_TEST_WORKER"

// TestMain lets the test binary be the worker process of the smoke test,
// so that it needs no separate build of feedworker.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := RunWorker(context.Background(), os.Args[1:], "test", os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString("bench worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		u = DefaultRedisURL
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("REDIS_URL %q: %v", u, err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s (REDIS_URL) and CI=true: %v", u, err)
		}
		t.Skipf("no Redis at %s; set REDIS_URL: %v", u, err)
	}
	return u
}

// TestSmoke runs the bench end to end at 200 feeds × 5 items: it fails if
// the bench errors (a worker failing, an item missing or doubled on the
// API, a count that does not add up), never on time.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end bench: skipped with -short")
	}
	u := redisURL(t)
	rep, err := Run(t.Context(), Options{
		Feeds: 200, Items: 5, Change: 0.1, Runs: 1, RedisURL: u,
		Command: []string{os.Args[0]},
		// The race detector sleeps a second at exit unless told not to.
		Env:     []string{childEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Timeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stores) != 2 || rep.Stores[0].Store != StoreEmbedded || rep.Stores[1].Store != StoreRedis {
		t.Fatalf("stores %+v; want embedded and redis", rep.Stores)
	}
	if f := rep.Floor.Median; f.Items != 1000 || f.CPU <= 0 || f.PeakRSSMB <= 0 {
		t.Errorf("floor = %+v; want 1000 items parsed, CPU and RSS measured", f)
	}
	for _, st := range rep.Stores {
		if len(st.Median) != 3 {
			t.Fatalf("%s: %d cycles in the report, want 3", st.Store, len(st.Median))
		}
		c1, c2, c3 := st.Median[0], st.Median[1], st.Median[2]
		if c1.Created != 1000 || c1.Polls != 200 || c1.FeedRequests != 200 {
			t.Errorf("%s: cycle 1 = %+v; want 1000 created from 200 polls", st.Store, c1)
		}
		if c2.FeedNotModified != 200 || c2.Created+c2.Updated != 0 {
			t.Errorf("%s: cycle 2 = %+v; want 200 304s and nothing sent", st.Store, c2)
		}
		if c3.Created != 20 || c3.Updated != 20 {
			t.Errorf("%s: cycle 3 = %+v; want 20 new and 20 edited items (10%% of 200 feeds)", st.Store, c3)
		}
		if st.Store == StoreRedis && c2.RoundTripsPerPoll >= 1 {
			t.Errorf("cycle 2: %.3f Redis round trips per poll; want under 1 (leases and validators loaded per pass)", c2.RoundTripsPerPoll)
		}
		for _, c := range st.Median {
			if c.CPU <= 0 || c.PeakRSSMB <= 0 || c.Wall <= 0 {
				t.Errorf("%s: cycle %d: wall %v, CPU %v, peak RSS %v; want all measured", st.Store, c.Cycle, c.Wall, c.CPU, c.PeakRSSMB)
			}
			if p := c.Phases; p.Start <= 0 || p.Setup <= 0 || p.Pass <= 0 || p.Pass >= c.Wall {
				t.Errorf("%s: cycle %d: phases %+v of wall %v; want each measured, the pass inside the wall", st.Store, c.Cycle, p, c.Wall)
			}
		}
		if r := rep.Ratios.CPUVsFloor[st.Store]; r <= 0 {
			t.Errorf("%s: CPU vs floor %v; want a ratio", st.Store, r)
		}
	}
	if rep.Ratios.EmbeddedVsRedisWall <= 0 || rep.Ratios.EmbeddedVsRedisCPU <= 0 {
		t.Errorf("ratios %+v; want embedded vs redis measured", rep.Ratios)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	// 200 × 5 is none of the goals' sizes: only the ratios are judged.
	if len(rep.Targets) != 4 || !strings.Contains(text.String(), "goal 2  cycle 1 worker CPU / gofeed floor CPU (redis)") {
		t.Errorf("targets %+v; want the two goal 1 ratios and goal 2 for each store, in the text", rep.Targets)
	}
	t.Logf("\n%s", text.String())
}

func TestContentWrite(t *testing.T) {
	tests := []struct {
		method, path   string
		create, update bool
	}{
		{"POST", "/v3/story", true, false},
		{"POST", "/v3/event", true, false},
		{"PUT", "/v3/link/12", false, true},
		{"PUT", "/v3/need/12/x", false, false},
		{"POST", "/v3/category", false, false},
		{"GET", "/v3/content", false, false},
		{"POST", "/oauth/token", false, false},
		{"POST", "/v3/story/3", false, false},
	}
	for _, tc := range tests {
		c, u := contentWrite(tc.method, tc.path)
		if c != tc.create || u != tc.update {
			t.Errorf("contentWrite(%s %s) = %v, %v; want %v, %v", tc.method, tc.path, c, u, tc.create, tc.update)
		}
	}
}

func TestMedians(t *testing.T) {
	runs := [][]Cycle{
		{{Cycle: 1, Wall: 3, CPU: 1, Created: 10, Phases: Phases{Pass: 2}}},
		{{Cycle: 1, Wall: 1, CPU: 5, Created: 10, Phases: Phases{Pass: 0.5}}},
		{{Cycle: 1, Wall: 2, CPU: 3, Created: 10, Phases: Phases{Pass: 1}}},
	}
	m := medians(runs)
	if len(m) != 1 || m[0].Wall != 2 || m[0].CPU != 3 || m[0].Created != 10 || m[0].Cycle != 1 || m[0].Phases.Pass != 1 {
		t.Errorf("medians = %+v; want wall 2, CPU 3, created 10, pass 1", m)
	}
	redis := [][]Cycle{
		{{Cycle: 1, Redis: &RedisStats{Commands: 7, ServerCPU: 4.6, Usec: 10}}},
		{{Cycle: 1, Redis: &RedisStats{Commands: 7, ServerCPU: 3.7, Usec: 30}}},
		{{Cycle: 1, Redis: &RedisStats{Commands: 8, ServerCPU: 4.1, Usec: 20}}},
	}
	if r := medians(redis)[0].Redis; r == nil || r.ServerCPU != 4.1 || r.Usec != 20 || r.Commands != 7 {
		t.Errorf("Redis stats of the medians = %+v; want the median server CPU 4.1 and usec 20, run 1's 7 commands", r)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of an even count = %v, want 2.5", got)
	}
}

func TestPhasesOf(t *testing.T) {
	start := time.Unix(100, 0)
	tm := WorkerTiming{StartedUnixNano: start.Add(10 * time.Millisecond).UnixNano(), Setup: 0.02, Pass: 0.5, PassCPU: 0.4}
	got := phasesOf(start, 600*time.Millisecond, tm)
	want := Phases{Start: 0.01, Setup: 0.02, Pass: 0.5, Exit: 0.07, PassCPU: 0.4}
	for _, d := range []float64{got.Start - want.Start, got.Setup - want.Setup, got.Pass - want.Pass, got.Exit - want.Exit, got.PassCPU - want.PassCPU} {
		if math.Abs(d) > 1e-9 {
			t.Errorf("phasesOf = %+v; want %+v", got, want)
			break
		}
	}
	if got := phasesOf(start, time.Second, WorkerTiming{}); got != (Phases{}) {
		t.Errorf("phasesOf without the worker's timing = %+v; want zero", got)
	}
}

func TestTargets(t *testing.T) {
	r := Report{
		Options: ReportOptions{Feeds: 5000, Items: 20},
		Stores: []StoreResult{{Store: StoreRedis, Median: []Cycle{{Cycle: 1, PeakRSSMB: 70}, {Cycle: 2, Phases: Phases{Pass: 0.5}}}},
			{Store: StoreEmbedded, Median: []Cycle{{Cycle: 1, PeakRSSMB: 90}}}},
		Ratios: Ratios{EmbeddedVsRedisWall: 1.1, EmbeddedVsRedisCPU: 1.3, CPUVsFloor: map[string]float64{StoreRedis: 1.9, StoreEmbedded: 2.5}},
	}
	got := map[string]bool{}
	for _, tg := range r.targets() {
		got[fmt.Sprintf("%d %s %s", tg.Goal, tg.What, tg.Store)] = tg.Met
	}
	want := map[string]bool{
		"1 cycle 1 wall, embedded / Redis ":                true,
		"1 cycle 1 worker CPU, embedded / Redis ":          false,
		"2 cycle 1 worker CPU / gofeed floor CPU redis":    true,
		"2 cycle 1 worker CPU / gofeed floor CPU embedded": false,
		"3 cycle 1 peak RSS at 5,000 × 20 redis":           true,  // 70 MiB = 73.4 MB
		"3 cycle 1 peak RSS at 5,000 × 20 embedded":        false, // 94.4 MB
	}
	if !maps.Equal(got, want) {
		t.Errorf("targets = %v\nwant %v (no all-304 target: the farm is not 1,000 feeds)", got, want)
	}
	r.Options.Feeds = 1000
	var pass []Target
	for _, tg := range r.targets() {
		if tg.Goal == 5 {
			pass = append(pass, tg)
		}
	}
	if len(pass) != 1 || pass[0].Met || pass[0].Store != StoreRedis {
		t.Errorf("goal 5 at 1,000 feeds = %+v; want Redis's 0.5 s pass, not met", pass)
	}
}
