package dedupe_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/dedupe"
)

// testCommitTail: an entry given in two parts (Change.Data and Tail) is
// kept and claimed as one, through Commit and through CommitAliases, and
// an entry without a tail as it is.
func testCommitTail(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	for _, feed := range []string{"plain", "aliased"} {
		want := map[string]string{}
		var changes []dedupe.Change
		for i := range 6 {
			ext := fmt.Sprint("item", i)
			head := fmt.Sprintf("{\"head\":%q}\n", feed+"/"+ext)
			tail := strings.Repeat(string(rune('a'+i)), 1000*i) // item0: no tail
			changes = append(changes, dedupe.Change{ExternalID: ext, Hash: "h1", Type: "story", Action: dedupe.ActionPublish, Data: []byte(head), Tail: tail})
			want[ext] = head + tail
		}
		if ac, ok := s.(dedupe.AliasCommitter); ok && feed == "aliased" {
			a := dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: feed, FP: "u:1"}, Target: dedupe.Key{FeedID: feed, ExternalID: "item1"}, Type: "story"}
			if _, err := ac.CommitAliases(ctx, feed, changes, nil, []dedupe.Alias{a}, nil, t0); err != nil {
				t.Fatal(err)
			}
		} else {
			mustCommit(t, s, feed, changes, nil, t0)
		}
		for _, c := range mustClaim(t, s, "w-"+feed, 10, t0) {
			if c.Data != want[c.Key.ExternalID] {
				t.Errorf("%s: claimed %.60q… (%d bytes), committed %.60q… (%d bytes)", c.Key, c.Data, len(c.Data), want[c.Key.ExternalID], len(want[c.Key.ExternalID]))
			}
			delete(want, c.Key.ExternalID)
		}
		if len(want) > 0 {
			t.Errorf("%s: %d entries not claimed", feed, len(want))
		}
	}
}
