package transform

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/cputime"
	"github.com/mmcdole/gofeed"
)

// benchFiles are real feeds copied into testdata/bench (see SOURCES.tsv):
// a WordPress news blog, an Atom link blog, a JSON Feed, an RSS 1.0 (RDF)
// feed and a newspaper's RSS with Media RSS.
func benchFiles(b *testing.B) map[string][]byte {
	b.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "bench", "*.*"))
	if err != nil {
		b.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		if strings.HasSuffix(f, ".tsv") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

// BenchmarkCorpus measures, per item, gofeed alone ("parse") and gofeed
// then Map ("parse+map") on each file and on all of them; the ratio of the
// two is the cost of the mapping. The pairs run back to back so that load
// from elsewhere on the machine hits both alike.
func BenchmarkCorpus(b *testing.B) {
	files := benchFiles(b)
	m := mustCompile(b, "bench", nil)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(b *testing.B, docs [][]byte, mapToo bool) {
		items := 0
		b.ReportAllocs()
		cpu0 := cputime.Self()
		for b.Loop() {
			for _, d := range docs {
				feed, err := gofeed.NewParser().Parse(bytes.NewReader(d))
				if err != nil {
					b.Fatal(err)
				}
				items += len(feed.Items)
				if mapToo {
					m.Map(feed, now)
				}
			}
		}
		cpu := cputime.Self() - cpu0
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(items, 1)), "ns/item")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(items, 1)), "cpu-ns/item")
	}
	var all [][]byte
	pair := func(name string, docs [][]byte) {
		b.Run(name+"/parse", func(b *testing.B) { run(b, docs, false) })
		b.Run(name+"/parse+map", func(b *testing.B) { run(b, docs, true) })
	}
	for _, name := range sortedKeys(files) {
		all = append(all, files[name])
		pair(name, [][]byte{files[name]})
	}
	pair("all", all)
}
