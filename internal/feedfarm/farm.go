// Package feedfarm serves generated RSS 2.0 feeds over HTTP for tests and
// benchmarks: N feeds of K items, deterministic for a seed, with ETag and
// Last-Modified, optional latency and gzip, and edits and new items on
// demand. It counts the requests it answers and the polls of each feed in
// flight.
package feedfarm

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options describe the farm.
type Options struct {
	Feeds int // number of feeds
	Items int // items per feed
	// ItemBytes is the rough size of each item's HTML description
	// (default 1500, as in the reference farm).
	ItemBytes int
	Seed      uint64
	Latency   time.Duration // added before each answer
	Gzip      bool          // gzip bodies when the client accepts it
}

// Farm is an http.Handler serving /feed/{n}.xml for n in [0, Feeds).
type Farm struct {
	o     Options
	epoch time.Time

	mu    sync.RWMutex
	feeds []*feed

	requests    atomic.Int64
	notModified atomic.Int64
	inFlight    []atomic.Int32 // per feed
	maxInFlight atomic.Int32   // the most concurrent polls any one feed saw
}

type feed struct {
	version int // bumped by Edit and Change
	// added counts the items Change put on top; the feed serves the
	// newest Items of its items, numbered 0..Items-1 from the start (0 the
	// newest) and Items, Items+1, ... for added ones.
	added    int
	edits    map[int]int // per item number: how many times it was edited
	body     []byte
	gzipped  []byte
	etag     string
	modified time.Time
}

// New builds a farm; feeds are rendered once and on each edit.
func New(o Options) *Farm {
	if o.ItemBytes <= 0 {
		o.ItemBytes = 1500
	}
	f := &Farm{o: o, epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), inFlight: make([]atomic.Int32, o.Feeds)}
	f.feeds = make([]*feed, o.Feeds)
	for i := range f.feeds {
		f.feeds[i] = &feed{edits: map[int]int{}}
		f.render(i)
	}
	return f
}

// Bytes returns feed n's current document, as served without gzip (for
// benchmarks that parse what the farm serves).
func (f *Farm) Bytes(n int) []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.feeds[n].body
}

// items returns the numbers of the items fd serves, newest first.
func (f *Farm) items(fd *feed) []int {
	out := make([]int, 0, f.o.Items)
	for n := f.o.Items + fd.added - 1; n >= f.o.Items && len(out) < f.o.Items; n-- {
		out = append(out, n)
	}
	for n := 0; len(out) < f.o.Items; n++ {
		out = append(out, n)
	}
	return out
}

// URL returns feed n's URL below base (the server's URL).
func URL(base string, n int) string { return fmt.Sprintf("%s/feed/%d.xml", base, n) }

// Edit changes the title of a fraction of each feed's items (at least one
// item of each feed when frac > 0), so the next poll sees new validators and
// edited items. It returns how many items changed.
func (f *Farm) Edit(frac float64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int(frac * float64(f.o.Items))
	if frac > 0 && n == 0 {
		n = 1
	}
	changed := 0
	for i, fd := range f.feeds {
		for _, item := range f.items(fd)[:min(n, f.o.Items)] {
			fd.edits[item]++
			changed++
		}
		fd.version++
		f.render(i)
	}
	return changed
}

// Change changes a fraction of the feeds, as a news site's feeds change
// between two polls: each changed feed gets one new item on top (its
// oldest item leaves the document) and one edited item (the newest one it
// had; a one-item feed has none left to edit, the new item pushes it out). The changed feeds are picked at random from the farm's seed and
// round, so runs are repeatable. It returns how many items are new and how
// many edited; the other feeds keep their validators and answer 304.
func (f *Farm) Change(frac float64, round uint64) (added, edited int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := int(frac*float64(len(f.feeds)) + 0.5)
	if frac > 0 && m == 0 {
		m = 1
	}
	rng := rand.New(rand.NewPCG(f.o.Seed^0x9e3779b97f4a7c15, round))
	for _, i := range rng.Perm(len(f.feeds))[:min(m, len(f.feeds))] {
		fd := f.feeds[i]
		if f.o.Items > 1 {
			fd.edits[f.items(fd)[0]]++
			edited++
		}
		fd.added++
		added++
		fd.version++
		f.render(i)
	}
	return added, edited
}

// Requests is how many requests the farm answered; NotModified how many of
// them were 304s.
func (f *Farm) Requests() int64    { return f.requests.Load() }
func (f *Farm) NotModified() int64 { return f.notModified.Load() }

// MaxConcurrentPolls is the most polls of one feed that were ever in flight
// at once (1 means no feed was polled twice at the same time).
func (f *Farm) MaxConcurrentPolls() int { return int(f.maxInFlight.Load()) }

// GUIDs lists the GUID of every item served now, the key the worker's
// external ids derive from.
func (f *Farm) GUIDs() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for i, fd := range f.feeds {
		for _, n := range f.items(fd) {
			out = append(out, guid(i, n))
		}
	}
	return out
}

func guid(feedN, item int) string { return fmt.Sprintf("urn:feedfarm:%d:%d", feedN, item) }

// render builds feed i's document; f.mu is held (or i is new).
func (f *Farm) render(i int) {
	fd := f.feeds[i]
	var b bytes.Buffer
	b.Grow(f.o.Items * (f.o.ItemBytes + 400))
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel>
<title>Farm feed %d</title>
<link>https://farm.example/%d/</link>
<description>Generated feed %d</description>
`, i, i, i)
	for _, j := range f.items(fd) {
		// Each item has its own generator, so its text does not depend on
		// which other items the document holds.
		rng := rand.New(rand.NewPCG(f.o.Seed, uint64(i)<<32|uint64(j)))
		// Item numbers from Items up were added later, so they are newer.
		age := j
		if j >= f.o.Items {
			age = f.o.Items - 1 - j
		}
		pub := f.epoch.Add(-time.Duration(age) * time.Hour).Add(-time.Duration(i) * time.Minute)
		title := fmt.Sprintf("Item %d of feed %d: %s", j, i, words(rng, 6))
		if e := fd.edits[j]; e > 0 {
			title += fmt.Sprintf(" (edit %d)", e)
		}
		fmt.Fprintf(&b, `<item>
<title>%s</title>
<link>https://farm.example/%d/items/%d?utm_source=rss</link>
<guid isPermaLink="false">%s</guid>
<pubDate>%s</pubDate>
<category>Category %d</category>
<description>%s</description>
</item>
`, html.EscapeString(title), i, j, guid(i, j), pub.Format(time.RFC1123Z), j%5,
			html.EscapeString(paragraphs(rng, f.o.ItemBytes, i, j)))
	}
	b.WriteString("</channel>\n</rss>\n")
	fd.body = b.Bytes()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(fd.body)
	_ = zw.Close()
	fd.gzipped = gz.Bytes()
	fd.etag = fmt.Sprintf(`"f%d-v%d"`, i, fd.version)
	fd.modified = f.epoch.Add(time.Duration(fd.version) * time.Hour)
}

var vocabulary = strings.Fields("alpha beta gamma delta river stone garden library council budget school " +
	"harbour bridge concert museum festival energy climate health science market winter summer report")

func words(rng *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

// paragraphs makes about size bytes of HTML with a link and an image.
func paragraphs(rng *rand.Rand, size, feedN, item int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<p><img src="/img/%d/%d.jpg" width="640" height="360" alt="illustration"></p>`, feedN, item)
	for b.Len() < size {
		fmt.Fprintf(&b, `<p>%s <a href="https://farm.example/%d/ref/%d">%s</a> %s.</p>`,
			words(rng, 12), feedN, rng.IntN(1000), words(rng, 2), words(rng, 10))
	}
	return b.String()
}

// ServeHTTP answers /feed/{n}.xml with conditional GET and optional gzip.
func (f *Farm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	name, ok := strings.CutPrefix(r.URL.Path, "/feed/")
	name, ok2 := strings.CutSuffix(name, ".xml")
	n, err := strconv.Atoi(name)
	if !ok || !ok2 || err != nil || n < 0 || n >= len(f.feeds) {
		http.NotFound(w, r)
		return
	}
	cur := f.inFlight[n].Add(1)
	defer f.inFlight[n].Add(-1)
	for {
		old := f.maxInFlight.Load()
		if cur <= old || f.maxInFlight.CompareAndSwap(old, cur) {
			break
		}
	}
	if f.o.Latency > 0 {
		select {
		case <-time.After(f.o.Latency):
		case <-r.Context().Done():
			return
		}
	}
	f.mu.RLock()
	fd := f.feeds[n]
	body, gz, etag, mod := fd.body, fd.gzipped, fd.etag, fd.modified
	f.mu.RUnlock()

	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", mod.Format(http.TimeFormat))
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		f.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/rss+xml; charset=utf-8")
	if f.o.Gzip && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}
