package config

import "reflect"

// Diff compares the feeds of two loaded configurations by id: added are in
// next only, removed in prev only, and changed in both with any effective
// setting different (url, interval, mapping, enabled... after defaults, so
// a change in the defaults section changes every feed that inherits it).
// Each list is in file order. A nil prev has no feeds. Settings outside
// the feeds (http, api) are not compared: they concern every feed.
func Diff(prev, next *Config) (added, removed, changed []string) {
	var prevFeeds, nextFeeds []Feed
	if prev != nil {
		prevFeeds = prev.Feeds
	}
	if next != nil {
		nextFeeds = next.Feeds
	}
	old := make(map[string]*Feed, len(prevFeeds))
	for i := range prevFeeds {
		old[prevFeeds[i].ID] = &prevFeeds[i]
	}
	seen := make(map[string]bool, len(nextFeeds))
	for i := range nextFeeds {
		f := &nextFeeds[i]
		seen[f.ID] = true
		switch o, ok := old[f.ID]; {
		case !ok:
			added = append(added, f.ID)
		case !same(reflect.ValueOf(*o), reflect.ValueOf(*f)):
			changed = append(changed, f.ID)
		}
	}
	for _, f := range prevFeeds {
		if !seen[f.ID] {
			removed = append(removed, f.ID)
		}
	}
	return added, removed, changed
}

// equal reports whether two configurations mean the same: every key's
// value, ignoring where in the file it was written.
func equal(a, b *Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	return same(reflect.ValueOf(*a), reflect.ValueOf(*b))
}

// same is reflect.DeepEqual over exported fields, except that a nil and
// an empty slice or map are the same: "categories: []" and no categories
// at all publish the same thing, and must not restart a feed.
func same(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !same(it.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() && !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	default:
		return a.Equal(b)
	}
}
