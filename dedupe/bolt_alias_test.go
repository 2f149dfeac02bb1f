package dedupe_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// TestBoltAliasValuesKeptApart checks that every alias of one transaction
// keeps its own stored value: bbolt holds a value, not a copy, until the
// commit, and the store cuts the values of a transaction from shared
// buffers, some given back when the value is already stored. Values of
// many sizes, some reserved a moment before, fill several buffers.
func TestBoltAliasValuesKeptApart(t *testing.T) {
	ctx := context.Background()
	s, err := dedupe.OpenBolt(filepath.Join(t.TempDir(), "store.db"), dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().Truncate(time.Millisecond)
	var all, reserved []dedupe.Alias
	var changes []dedupe.Change
	for i := range 300 {
		ext := fmt.Sprintf("e%03d", i)
		changes = append(changes, change(ext, "h", dedupe.ActionPublish))
		tgt := dedupe.Key{FeedID: "f", ExternalID: ext}
		extra := strings.Repeat(string(rune('a'+i%26)), i*7%900)
		across := dedupe.Alias{AliasFP: dedupe.AliasFP{FP: fmt.Sprintf("u:%03d", i)}, Target: tgt, Type: "story", Extra: extra}
		mine := dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: "f", FP: fmt.Sprintf("b:%03d", i)}, Target: tgt, Type: "t" + ext, Extra: extra}
		if i%2 == 0 {
			reserved = append(reserved, across)
		}
		all = append(all, across, mine)
	}
	if _, err := s.ReserveAliases(ctx, reserved, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitAliases(ctx, "f", changes, &dedupe.Validators{ETag: "e"}, all, nil, now); err != nil {
		t.Fatal(err)
	}
	fps := make([]dedupe.AliasFP, len(all))
	for i, a := range all {
		fps[i] = a.AliasFP
	}
	got, err := s.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range all {
		g := got[i]
		if !g.Found || g.Target != a.Target || g.Type != a.Type || g.Extra != a.Extra {
			t.Errorf("alias %q = %+v; want target %v, type %q, extra of %d bytes", a.FP, g, a.Target, a.Type, len(a.Extra))
		}
		if wantSince := a.FeedID == "" && i%4 == 0; wantSince != !g.Since.IsZero() || wantSince && !g.Since.Equal(now) {
			t.Errorf("alias %q since %v; reserved: %v", a.FP, g.Since, wantSince)
		}
	}
}
