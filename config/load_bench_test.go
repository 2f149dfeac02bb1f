package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// manyFeeds is a configuration of n feeds as `feedworker bench` writes it.
func manyFeeds(n int) []byte {
	var b strings.Builder
	b.WriteString("api:\n  base_url: http://127.0.0.1:1\n  token_url: http://127.0.0.1:1/oauth/token\n  client_id: a\n  client_secret: b\n")
	b.WriteString("redis:\n  url: redis://127.0.0.1:6379/0\ndefaults:\n  initial_items: 20\nfeeds:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: farm-%d\n    url: http://127.0.0.1:40000/feeds/%d.xml\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkParseFeeds measures loading a configuration of 20,000 feeds:
// bytes allocated (-benchmem) and the heap kept by the loaded Config
// ("live-B").
func BenchmarkParseFeeds(b *testing.B) {
	data := manyFeeds(20_000)
	var cfg *Config
	for b.Loop() {
		var err error
		if cfg, err = Parse("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	cfg = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	cfg, err := Parse("bench.yaml", data)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "live-B")
	runtime.KeepAlive(cfg)
}
