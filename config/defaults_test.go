package config

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestBuiltinDefaults spells out every default once more, by hand, so that
// changing one in builtin is a visible decision.
func TestBuiltinDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, head+feed, nil)
	d := func(s string) Duration { v, _ := ParseDuration(s); return Duration(v) }
	want := Config{
		API:   API{BaseURL: "https://api.example.com", Token: "t", RateBurst: 1, Timeout: d("30s"), TemplatePath: "/v3/{type}/template", SandboxStyle: "strict"},
		Redis: Redis{Prefix: "feedworker:", Partitions: 16, Timeout: d("3s")},
		Store: Store{Path: "feedworker.db", Retention: d("90d")},
		HTTP: HTTP{
			UserAgent:      "feedworker/test (+https://github.com/feedworker/feedworker)",
			ConnectTimeout: d("10s"), Timeout: d("60s"), MaxBodySize: 10 * 1024 * 1024, MaxRedirects: 10,
			FollowPermanentRedirects: ptr(true),
			MaxConcurrency:           32, PerHostConcurrency: 4,
			MinInterval: d("1m"), MaxInterval: d("24h"), MaxBackoff: d("6h"),
		},
		// 64 senders: head names no Redis, so the store is the embedded
		// one (TestWorkersDefaultByStore).
		Publish: Publish{Workers: 64, MaxBackoff: d("1h"), ClaimTTL: d("5m"), LeaseTTL: d("1m"), ShutdownGrace: d("8s"), MaxBacklog: 2000},
		Admin:   Admin{Listen: "127.0.0.1:9090", History: 200},
		WebSub:  WebSub{Listen: ":8091", Lease: d("7d"), FallbackInterval: d("6h")},
		Log:     Log{Level: "info", Format: "text"},
		Process: Process{MemoryLimit: "auto"},
		File:    "feeds.yaml",
	}
	settings := FeedSettings{
		Enabled: ptr(true), Interval: ptr(d("15m")), InitialItems: ptr(10), RecreateDeleted: ptr(false),
		Format: ptr("auto"),
		Reposts: Reposts{Match: []string{"url", "text"}, AcrossFeeds: ptr(true), Window: ptr(d("720h")),
			MergeCategories: ptr(true), FloodMax: ptr(25)},
		Mapping: Mapping{
			Type: "story", PassUnmappedCategories: ptr(false), CreateCategories: ptr(false),
			TitleMax: ptr(250), SummaryMax: ptr(500), FetchOGImage: ptr(false),
			FullText: ptr("never"), FullTextMinChars: ptr(500),
			ICal: ICal{Window: ptr(d("90d")), WindowBack: ptr(d("1d")), OnCancel: ptr("delete"), InitialPast: ptr(false)},
		},
	}
	want.Defaults = settings
	want.Feeds = []Feed{{ID: "a", URL: "https://example.com/feed.xml", FeedSettings: settings}}
	if diff := cmp.Diff(want, *cfg, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestWorkersDefaultByStore: the embedded store sends with more workers
// by default than Redis (see embeddedWorkers), and a value in the file
// wins with either.
func TestWorkersDefaultByStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      int
	}{
		{"embedded", head + feed, 64},
		{"redis url", head + "redis:\n  url: redis://127.0.0.1:6379/0\n" + feed, 8},
		{"redis addrs", head + "redis:\n  addrs: [127.0.0.1:6379]\n" + feed, 8},
		{"embedded, set in the file", head + "publish:\n  workers: 3\n" + feed, 3},
		{"redis, set in the file", head + "redis:\n  url: redis://127.0.0.1:6379/0\npublish:\n  workers: 3\n" + feed, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := mustParse(t, tc.src, nil).Publish.Workers; got != tc.want {
				t.Errorf("publish.workers = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestDefaultsPrecedence(t *testing.T) {
	t.Parallel()
	src := head + `defaults:
  interval: 30m
  title_max: 100
  categories: [A, B]
  include:
    keywords: [x]
    fields: [title]
feeds:
  - id: own
    url: https://e.example/own
    interval: 1h
    categories: [C]
    include:
      patterns: ['y']
  - id: inherits
    url: https://e.example/inherits
  - id: empty
    url: https://e.example/empty
    categories: []
    summary_max: 0
`
	cfg := mustParse(t, src, nil)
	own, inherits, empty := cfg.Feeds[0], cfg.Feeds[1], cfg.Feeds[2]
	tests := []struct {
		name      string
		got, want any
	}{
		{"own interval wins", *own.Interval, Duration(time.Hour)},
		{"defaults interval", *inherits.Interval, Duration(30 * time.Minute)},
		{"defaults over built-in", *own.TitleMax, 100},
		{"built-in when nobody sets it", *own.SummaryMax, 500},
		{"own zero wins", *empty.SummaryMax, 0},
		{"own list replaces", own.Categories, []string{"C"}},
		{"list inherited", inherits.Categories, []string{"A", "B"}},
		{"explicit empty list overrides", empty.Categories, []string{}},
		{"sub-section replaced whole", *own.Include, Filter{Patterns: []string{"y"}}},
		{"sub-section inherited", *inherits.Include, Filter{Keywords: []string{"x"}, Fields: []string{"title"}}},
		{"defaults keeps its own", *cfg.Defaults.Interval, Duration(30 * time.Minute)},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if empty.Categories == nil {
		t.Error("categories: [] decoded as nil; it must stay an explicit empty list")
	}

	// An inherited value is the defaults' own (a loaded config is never
	// changed): one value for every feed that inherits it, not a copy each.
	if inherits.Interval != cfg.Defaults.Interval || empty.Interval != cfg.Defaults.Interval ||
		inherits.Include != cfg.Defaults.Include || inherits.TitleMax != cfg.Defaults.TitleMax {
		t.Error("an inherited default is a copy, not the defaults' value")
	}
	// A feed's override is its own: it reached neither the defaults nor the
	// feeds that inherit them.
	if own.Interval == cfg.Defaults.Interval || own.Include == cfg.Defaults.Include || empty.SummaryMax == cfg.Defaults.SummaryMax {
		t.Error("a feed's own value is shared with the defaults")
	}
}

// TestOverrideLeavesSharedDefault parses feeds that override every kind of
// inherited value (a scalar, a list, a map, a sub-section, a key of a
// section inherited key by key) next to feeds that inherit them, and checks
// the defaults and the inheriting feeds still hold the defaults' values.
func TestOverrideLeavesSharedDefault(t *testing.T) {
	t.Parallel()
	src := head + `defaults:
  interval: 30m
  categories: [A]
  category_map: {x: X}
  include:
    keywords: [k]
  reposts:
    match: [url]
    flood_max: 5
  ical:
    on_cancel: keep
feeds:
  - id: before
    url: https://e.example/before
  - id: overrides
    url: https://e.example/overrides
    interval: 1h
    categories: [B]
    category_map: {y: Y}
    include:
      keywords: [other]
    reposts:
      match: [text]
    ical:
      on_cancel: delete
  - id: after
    url: https://e.example/after
`
	cfg := mustParse(t, src, nil)
	want := []string{"30m0s [A] map[x:X] [k] [url] 5 keep", "1h0m0s [B] map[y:Y] [other] [text] 5 delete", "30m0s [A] map[x:X] [k] [url] 5 keep"}
	show := func(s FeedSettings) string {
		return fmt.Sprintf("%v %v %v %v %v %d %s", s.Interval.D(), s.Categories, s.CategoryMap, s.Include.Keywords,
			s.Reposts.Match, *s.Reposts.FloodMax, *s.ICal.OnCancel)
	}
	for i, f := range cfg.Feeds {
		if got := show(f.FeedSettings); got != want[i] {
			t.Errorf("feed %s: got %s, want %s", f.ID, got, want[i])
		}
	}
	if got := show(cfg.Defaults); got != want[0] {
		t.Errorf("defaults: got %s, want %s", got, want[0])
	}
}

func TestSectionKeysSetOrNot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		listen    string
		prefix    string
		redirects int
	}{
		{"absent", head, "127.0.0.1:9090", "feedworker:", 10},
		{"null", head + "admin:\n  listen:\nredis:\n  prefix: ~\nhttp:\n  max_redirects: null\n", "127.0.0.1:9090", "feedworker:", 10},
		{"empty and zero are values", head + "admin:\n  listen: ''\nredis:\n  prefix: \"\"\nhttp:\n  max_redirects: 0\n", "", "", 0},
		{"empty expansion means not set", head + "admin:\n  listen: ${NOPE:-}\n", "127.0.0.1:9090", "feedworker:", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := mustParse(t, tt.src, nil)
			got := fmt.Sprintf("%q %q %d", cfg.Admin.Listen, cfg.Redis.Prefix, cfg.HTTP.MaxRedirects)
			want := fmt.Sprintf("%q %q %d", tt.listen, tt.prefix, tt.redirects)
			if got != want {
				t.Errorf("listen, prefix, redirects: got %s, want %s", got, want)
			}
		})
	}
}

func TestBuiltinIntervalFitsBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, http string
		want       time.Duration
	}{
		{"unchanged", "", 15 * time.Minute},
		{"raised floor", "http:\n  min_interval: 1h\n", time.Hour},
		{"lowered ceiling", "http:\n  max_interval: 5m\n", 5 * time.Minute},
	}
	for _, tt := range tests {
		cfg := mustParse(t, head+tt.http+feed, nil)
		if got := cfg.Feeds[0].Interval.D(); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestInheritCoversEveryField fills every field of FeedSettings by
// reflection, so a field added to the schema is covered without editing
// this test: a set field is kept, an unset one inherited, and the source
// is left as it was.
func TestInheritCoversEveryField(t *testing.T) {
	t.Parallel()
	src := fill(reflect.TypeFor[FeedSettings](), 1).Interface().(FeedSettings)
	want := deepCopy(reflect.ValueOf(src)).Interface().(FeedSettings)

	var dst FeedSettings
	inherit(&dst, src)
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Fatalf("an empty feed does not inherit everything (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, src); diff != "" {
		t.Errorf("inherit changed its source (-want +got):\n%s", diff)
	}

	own := fill(reflect.TypeFor[FeedSettings](), 2).Interface().(FeedSettings)
	wantOwn := deepCopy(reflect.ValueOf(own)).Interface().(FeedSettings)
	inherit(&own, src)
	if diff := cmp.Diff(wantOwn, own); diff != "" {
		t.Errorf("a feed's own settings were overwritten (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, src); diff != "" {
		t.Errorf("a feed's own settings reached the source (-want +got):\n%s", diff)
	}

	// A feed that sets every other field, including inside Mapping, gets
	// exactly the others from the source: the merge is per field.
	for parity := range 2 {
		src := fill(reflect.TypeFor[FeedSettings](), 1).Interface().(FeedSettings)
		dst := fill(reflect.TypeFor[FeedSettings](), 2).Interface().(FeedSettings)
		want := deepCopy(reflect.ValueOf(dst)).Interface().(FeedSettings)
		srcLeaves := leaves(reflect.ValueOf(&src).Elem())
		wantLeaves := leaves(reflect.ValueOf(&want).Elem())
		for i, l := range leaves(reflect.ValueOf(&dst).Elem()) {
			if i%2 == parity {
				l.Set(reflect.Zero(l.Type()))
				wantLeaves[i].Set(srcLeaves[i])
			}
		}
		inherit(&dst, src)
		if diff := cmp.Diff(want, dst); diff != "" {
			t.Errorf("half-set feed, parity %d (-want +got):\n%s", parity, diff)
		}
	}
}

// leaves lists the setting fields of v, through embedded structs.
func leaves(v reflect.Value) []reflect.Value {
	var out []reflect.Value
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, leaves(v.Field(i))...)
		} else {
			out = append(out, v.Field(i))
		}
	}
	return out
}

// fill returns a value of type t with every field set, from seed.
func fill(t reflect.Type, seed int) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(fill(t.Elem(), seed))
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(fill(t.Field(i).Type, seed))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		v.Index(0).Set(fill(t.Elem(), seed))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(fill(t.Key(), seed), fill(t.Elem(), seed))
	case reflect.String:
		v.SetString(fmt.Sprintf("value-%d", seed))
	case reflect.Bool:
		v.SetBool(seed%2 == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Float64:
		v.SetFloat(float64(seed))
	default:
		panic("fill: add a case for " + t.String())
	}
	return v
}
