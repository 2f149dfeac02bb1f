package transform

// ForFeed returns a mapping that maps as m does, for the feed feedID. The
// compiled rules, filters, paths and sanitizer policy are shared with m, not
// copied: they are never changed after Compile, so feeds whose mapping
// settings are the same (most often all of them: the defaults) need one
// compiled copy, not one each (docs/PERFORMANCE.md, static state per feed).
func (m *Mapping) ForFeed(feedID string) *Mapping {
	return &Mapping{feedID: feedID, rules: m.rules}
}
