package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/internal/feedfarm"
)

// Floor is what the gofeed-only floor measured: a child process that
// fetches every feed of the farm with net/http, at the worker's
// concurrency, and parses it with gofeed, and nothing else (no store, no
// mapping, no API). Worker CPU divided by Floor CPU is the cost of
// everything feedworker adds to fetching and parsing.
type Floor struct {
	Wall      float64 `json:"wall_s"`
	CPU       float64 `json:"cpu_s"`
	PeakRSSMB float64 `json:"peak_rss_mib"`
	Items     int     `json:"items"`
}

// floorReport is what the floor process writes for the bench.
type floorReport struct {
	Items     int   `json:"items"`
	PeakRSSKB int64 `json:"peak_rss_kb"`
}

// runFloorChild is the floor process (RunWorker with --floor): fetch and
// parse feeds 0..feeds-1 of the farm at base.
func runFloorChild(ctx context.Context, base string, feeds, concurrency int, report string) error {
	if feeds < 1 || concurrency < 1 {
		return errors.New("floor: --feeds and --concurrency must be at least 1")
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxConnsPerHost: concurrency, MaxIdleConnsPerHost: concurrency,
	}}
	defer client.CloseIdleConnections()
	var next, items atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, concurrency)
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1) - 1)
				if n >= feeds || ctx.Err() != nil {
					return
				}
				k, err := fetchParse(ctx, client, feedfarm.URL(base, n))
				if err != nil {
					errs[w] = err
					return
				}
				items.Add(int64(k))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	kb, err := peakRSS()
	if err != nil {
		return err
	}
	b, err := json.Marshal(floorReport{Items: int(items.Load()), PeakRSSKB: kb})
	if err != nil {
		return fmt.Errorf("floor report: %w", err)
	}
	return os.WriteFile(report, b, 0o600)
}

func fetchParse(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	f, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	return len(f.Items), nil
}

// floorFlags are RunWorker's flags for the floor.
type floorFlags struct {
	base        *string
	feeds       *int
	concurrency *int
}

func addFloorFlags(fs *flag.FlagSet) floorFlags {
	return floorFlags{
		base:        fs.String("floor", "", "measure the gofeed-only floor against the farm at this base URL instead of running the worker"),
		feeds:       fs.Int("feeds", 0, "with --floor: feeds to fetch"),
		concurrency: fs.Int("concurrency", 0, "with --floor: concurrent fetches"),
	}
}

// floor runs the floor process against the farm and measures it.
func (e *env) floor(ctx context.Context) (Floor, error) {
	o := e.o
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	report := fmt.Sprintf("%s/run%d-floor.json", o.Dir, e.run+1)
	args := append(append([]string{}, o.Command[1:]...), "--report", report,
		"--floor", e.farmURL, "--feeds", fmt.Sprint(o.Feeds), "--concurrency", fmt.Sprint(o.Concurrency))
	ru, _, wall, logPath, err := e.child(ctx, "floor", args)
	if err != nil {
		return Floor{}, err
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return Floor{}, fmt.Errorf("floor report: %w", err)
	}
	var r floorReport
	if err := json.Unmarshal(b, &r); err != nil {
		return Floor{}, fmt.Errorf("floor report %s: %w", report, err)
	}
	if want := o.Feeds * o.Items; r.Items != want {
		return Floor{}, fmt.Errorf("floor parsed %d items, want %d (log: %s)", r.Items, want, tail(logPath))
	}
	return Floor{Wall: wall.Seconds(), CPU: tvSeconds(ru.Utime) + tvSeconds(ru.Stime),
		PeakRSSMB: float64(r.PeakRSSKB) / 1024, Items: r.Items}, nil
}
