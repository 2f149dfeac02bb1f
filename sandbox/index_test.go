package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestExternalIDIndex: lists filtered on external_id (eq and in) give the
// answer a full scan gives after creates, an update that changes the
// value, a delete, and a restart from the data file (the journal replayed
// without the API's bookkeeping).
func TestExternalIDIndex(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sandbox.json")
	f := newFixture(t, Options{DataFile: file})
	for i := 1; i <= 30; i++ {
		f.create("/v3/story", map[string]any{"title": fmt.Sprintf("s%d", i), "external_id": fmt.Sprintf("x-%d", i%10)})
	}
	// Used once before the changes, so the changes below go through the
	// built index rather than a fresh build.
	check := func(f *fixture, filter string, want []int64) {
		t.Helper()
		l := f.must(200, "GET", filterPath("/v3/content", filter)+"&page_size=500", nil).list(t)
		if got := ids(t, l.Data); !slices.Equal(got, want) || l.Total != len(want) {
			t.Errorf("%s: ids %v (total %d), want %v", filter, got, l.Total, want)
		}
	}
	check(f, `{"external_id":{"eq":"x-3"}}`, []int64{3, 13, 23})
	check(f, `{"external_id":{"in":"x-3,x-1,nope"}}`, []int64{1, 3, 11, 13, 21, 23})
	check(f, `{"external_id":{"in":"x-3"},"title":{"eq":"s13"}}`, []int64{13})

	f.must(200, "PUT", "/v3/story/13", env(map[string]any{"id": 13, "external_id": "x-1"}))
	f.must(204, "DELETE", "/v3/story/23", nil)
	f.create("/v3/story", map[string]any{"title": "s31", "external_id": "x-3"})
	want3, want1 := []int64{3, 31}, []int64{1, 11, 13, 21}
	check(f, `{"external_id":{"eq":"x-3"}}`, want3)
	check(f, `{"external_id":{"in":"x-1"}}`, want1)
	check(f, `{"external_id":{"neq":"x-3"},"title":{"in":"s3,s13,s31"}}`, []int64{13})

	g := newFixture(t, Options{DataFile: file})
	check(g, `{"external_id":{"eq":"x-3"}}`, want3)
	check(g, `{"external_id":{"in":"x-1,x-3"}}`, []int64{1, 3, 11, 13, 21, 31})
}
