package config

import (
	"reflect"
	"runtime/debug"
	"sync"
	"time"
)

// builtin returns the built-in defaults. It is the only place a default
// value is written down: Load applies it, and REFERENCE.md's default column
// is generated from it. version goes into the user agent.
func builtin(version string) Config {
	return Config{
		API: API{
			RateBurst:    1,
			Timeout:      Duration(30 * time.Second),
			TemplatePath: "/v3/{type}/template",
			SandboxStyle: "strict",
		},
		Redis: Redis{Prefix: "feedworker:", Partitions: 16, Timeout: Duration(3 * time.Second)},
		Store: Store{
			Path:      "feedworker.db",
			Retention: Duration(90 * 24 * time.Hour),
		},
		HTTP: HTTP{
			UserAgent:                "feedworker/" + version + " (+https://github.com/feedworker/feedworker)",
			ConnectTimeout:           Duration(10 * time.Second),
			Timeout:                  Duration(60 * time.Second),
			MaxBodySize:              10 << 20,
			MaxRedirects:             10,
			FollowPermanentRedirects: ptr(true),
			MaxConcurrency:           32,
			PerHostConcurrency:       4,
			MinInterval:              Duration(time.Minute),
			MaxInterval:              Duration(24 * time.Hour),
			MaxBackoff:               Duration(6 * time.Hour),
		},
		Publish: Publish{
			Workers:       8,
			MaxBackoff:    Duration(time.Hour),
			ClaimTTL:      Duration(5 * time.Minute),
			LeaseTTL:      Duration(time.Minute),
			ShutdownGrace: Duration(8 * time.Second),
			MaxBacklog:    2000,
		},
		Admin: Admin{Listen: "127.0.0.1:9090", History: 200},
		WebSub: WebSub{
			Listen:           ":8091",
			Lease:            Duration(7 * 24 * time.Hour),
			FallbackInterval: Duration(6 * time.Hour),
		},
		Log:     Log{Level: "info", Format: "text"},
		Process: Process{MemoryLimit: "auto"},
		Defaults: FeedSettings{
			Enabled:         ptr(true),
			Interval:        ptr(Duration(15 * time.Minute)),
			InitialItems:    ptr(10),
			RecreateDeleted: ptr(false),
			Format:          ptr("auto"),
			Reposts: Reposts{
				Match:           []string{"url", "text"},
				AcrossFeeds:     ptr(true),
				Window:          ptr(Duration(720 * time.Hour)),
				MergeCategories: ptr(true),
				FloodMax:        ptr(25),
			},
			Mapping: Mapping{
				Type:                   "story",
				PassUnmappedCategories: ptr(false),
				CreateCategories:       ptr(false),
				TitleMax:               ptr(250),
				SummaryMax:             ptr(500),
				FetchOGImage:           ptr(false),
				FullText:               ptr("never"),
				FullTextMinChars:       ptr(500),
				ICal: ICal{
					Window:      ptr(Duration(90 * 24 * time.Hour)),
					WindowBack:  ptr(Duration(24 * time.Hour)),
					OnCancel:    ptr("delete"),
					InitialPast: ptr(false),
				},
			},
		},
	}
}

// Default returns the built-in defaults with this build's version in the
// user agent. Packages that fill in zero fields of a section they are
// given (feeds.NewFetcher, article.NewFetcher) take them from here, so a
// default is still written down once; the worker always passes loaded
// values, which have every default applied.
func Default() Config { return builtin(buildVersion()) }

func ptr[T any](v T) *T { return &v }

// embeddedWorkers is publish.workers' default with the embedded store
// (no redis.url nor redis.addrs); Redis keeps builtin's 8. A sender waits,
// per item, for the API's answer and then for the store to record the
// outcome. With Redis that is a sub-millisecond round trip; the embedded
// store commits to disk (a bbolt commit is two fdatasyncs, 3 to 8 ms on
// the disks measured), and the embedded sandbox syncs its journal before
// it answers. Commits are shared by the writes waiting at that moment
// (group commit), so what bounds delivery is how many items wait for each
// fsync, which is the number of senders: 8 delivered a few hundred items a
// second whatever the CPU. The quickstart's 10,000-item feed (the
// embedded sandbox and store, docs/PERFORMANCE.md) took 20.7 s with 8
// senders and 12.8, 10.2 and 10.9 s with 32, 64 and 128, and fewer CPU
// seconds too (fewer, larger commits). A real API sees up to this many
// requests at once; api.rate_limit and the client's adaptive pacing still
// apply, and publish.workers in the file overrides it.
const embeddedWorkers = 64

// storeDefaults sets the built-in defaults that depend on the store the
// file chooses (see embeddedWorkers).
func storeDefaults(def *Config, r Redis) {
	if !r.Enabled() {
		def.Publish.Workers = embeddedWorkers
	}
}

// fitInterval brings the built-in feed interval within the file's
// http.min_interval and http.max_interval. Only the built-in value moves:
// raising min_interval to 1h should not make the file invalid because of
// a 15m nobody wrote, while an interval written in the file and out of
// bounds is an error (see validate).
func fitInterval(def *FeedSettings, h HTTP) {
	if def.Interval != nil && h.MinInterval > 0 && h.MinInterval <= h.MaxInterval {
		*def.Interval = min(max(*def.Interval, h.MinInterval), h.MaxInterval)
	}
}

// buildVersion is the main module's version as the go command stamped it,
// or "dev" for builds from a working tree. It is read once: Default is
// called per feed (transform.Compile, the poller), and parsing the build
// info each time cost about 20 KiB of garbage and 50 µs a call
// (docs/PERFORMANCE.md). The value never changes while the process runs.
var buildVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
})

// applySectionDefaults gives every key of the top-level sections (api,
// redis, http, ...) that the file did not set its built-in default. These
// keys are plain values, so "not set" comes from the decoder's record of
// the keys present (set), which is what lets `admin.listen: ""` mean
// "off" while a missing admin.listen means the default address.
func applySectionDefaults(cfg *Config, def Config, set map[string]bool) {
	v, dv := reflect.ValueOf(cfg).Elem(), reflect.ValueOf(def)
	for _, sec := range yamlFields(v.Type()) {
		if sec.Key == "defaults" || sec.Key == "feeds" {
			continue
		}
		fillUnset(v.FieldByIndex(sec.Index), dv.FieldByIndex(sec.Index), sec.Key, set)
	}
}

func fillUnset(v, def reflect.Value, path string, set map[string]bool) {
	for _, f := range yamlFields(v.Type()) {
		p := path + "." + f.Key
		fv, dfv := v.FieldByIndex(f.Index), def.FieldByIndex(f.Index)
		switch {
		case set[p] || dfv.IsZero():
		case fv.Kind() == reflect.Struct && !reflect.PointerTo(fv.Type()).Implements(textUnmarshalerType):
			fillUnset(fv, dfv, p, set)
		default:
			fv.Set(deepCopy(dfv))
		}
	}
}

// inherit fills every feed setting that dst does not set with src's value.
// It is the one merge of feed settings (built-in defaults ← the defaults
// section ← a feed's own keys); it walks the struct by reflection so that
// a field added to FeedSettings or Mapping is inherited without anyone
// remembering to add it here. "Set" is: a non-nil pointer, slice or map,
// or a non-zero plain value (Mapping.Type). Lists, maps and pointers to
// structs (include, event) are inherited or replaced whole, never merged.
//
// An inherited value is src's own, shared, not a copy: a loaded config is
// never changed (a reload is a new one), and a copy of the defaults in
// every feed was about 200 bytes of live heap a feed, a megabyte at 5,000
// feeds (docs/PERFORMANCE.md). A feed's own keys are its own values, so a
// feed's override never reaches the defaults or another feed.
func inherit(dst *FeedSettings, src FeedSettings) {
	inheritValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src))
}

func inheritValue(dst, src reflect.Value) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		// Embedded settings, and sub-sections that are plain structs
		// (ical), are inherited key by key.
		if f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(textUnmarshalerType) {
			inheritValue(dst.Field(i), src.Field(i))
			continue
		}
		if !isSet(dst.Field(i)) && isSet(src.Field(i)) {
			dst.Field(i).Set(src.Field(i))
		}
	}
}

func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return !v.IsNil()
	default:
		return !v.IsZero()
	}
}

// deepCopy copies v so that no pointer, slice or map is shared: a section's
// built-in default written into a config, and a Redacted copy, must not
// share anything with what they came from.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			m.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return m
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v) // plain fields, and unexported ones, which cannot be set one by one
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				s.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return s
	default:
		return v
	}
}
