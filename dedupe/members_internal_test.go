package dedupe

import (
	"fmt"
	"testing"
)

// TestPreferredSpreads checks that rendezvous hashing gives each of three
// workers about a third of the feeds, and that one leaving moves only its
// own feeds.
func TestPreferredSpreads(t *testing.T) {
	three := []string{"host/1/1", "host/2/2", "host/3/3"}
	count := map[string]int{}
	moved := 0
	for i := range 3000 {
		f := fmt.Sprint("feed-", i)
		p := preferred(three, f)
		count[p]++
		if p != three[2] && preferred(three[:2], f) != p {
			moved++
		}
	}
	for _, m := range three {
		if count[m] < 800 || count[m] > 1200 {
			t.Errorf("%s got %d of 3000 feeds; want about 1000 (%v)", m, count[m], count)
		}
	}
	if moved != 0 {
		t.Errorf("%d feeds of the staying workers moved when one left", moved)
	}
}

// TestMemberNames checks that a member name carries its feeds'
// fingerprint, the same whatever the order of the ids, and that a name of
// an older worker (its id alone) carries none.
func TestMemberNames(t *testing.T) {
	fp := feedsFingerprint([]string{"b", "a", "c"})
	if fp == "" || fp != feedsFingerprint([]string{"c", "a", "b", "a"}) {
		t.Fatalf("fingerprint depends on order or duplicates: %q", fp)
	}
	if fp == feedsFingerprint([]string{"a", "b"}) {
		t.Fatal("two different lists have one fingerprint")
	}
	if got := memberFeeds(memberName("host/1/2", fp)); got != fp {
		t.Errorf("memberFeeds(memberName(...)) = %q, want %q", got, fp)
	}
	if got := memberFeeds("host/1/2"); got != "" {
		t.Errorf("an id alone has fingerprint %q, want none", got)
	}
}
