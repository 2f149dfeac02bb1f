package dedupe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// aliasState reads the aliases bucket (key → expiry ms) and the keys the
// expiry index notes, counted by key.
func aliasState(t *testing.T, b *Bolt) (aliases map[string]int64, noted map[string]int, entries int) {
	t.Helper()
	aliases, noted = map[string]int64{}, map[string]int{}
	err := b.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bAliases).ForEach(func(k, v []byte) error {
			_, exp, err := splitAliasExp(v)
			aliases[string(k)] = exp
			return err
		}); err != nil {
			return err
		}
		return tx.Bucket(bAliasExp).ForEach(func(k, v []byte) error {
			entries++
			if len(v) == 0 {
				noted[string(k[8:])]++
			}
			for len(v) > 0 {
				l, m := binary.Uvarint(v)
				noted[string(v[m:m+int(l)])]++
				v = v[m+int(l):]
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return aliases, noted, entries
}

// checkNotedOnce fails unless the bucket holds want aliases, each noted
// once in the expiry index.
func checkNotedOnce(t *testing.T, b *Bolt, want int, when string) {
	t.Helper()
	aliases, noted, _ := aliasState(t, b)
	if len(aliases) != want {
		t.Fatalf("%d aliases stored %s, want %d", len(aliases), when, want)
	}
	for k := range aliases {
		if noted[k] != 1 {
			t.Errorf("alias %q noted %d times %s, want once", k, noted[k], when)
		}
	}
}

func ownAlias(feed, fp, ext string, ttl time.Duration) Alias {
	return Alias{AliasFP: AliasFP{FeedID: feed, FP: fp}, Target: Key{feed, ext}, Type: "story", TTL: ttl}
}

// TestBoltAliasPurge: the purge deletes the aliases whose own expiry has
// passed and keeps those renewed since they were noted, noting them again;
// renewals write no entries (a feed that changes renews its aliases at
// every fetch), so the index notes each alias about once however often
// it is renewed; entries of the form before batches are purged alike.
func TestBoltAliasPurge(t *testing.T) {
	b, _ := openFileBolt(t)
	ctx := t.Context()
	t0 := time.UnixMilli(1_700_000_000_000)
	const ttl = 2 * time.Hour

	// 300 aliases (more than one entry holds) put at t0; the first 100
	// renewed every minute for an hour and a half.
	var all []Alias
	for i := range 300 {
		all = append(all, ownAlias("f1", fmt.Sprintf("u:%03d", i), fmt.Sprintf("e%d", i), ttl))
	}
	if err := b.PutAliases(ctx, all, t0); err != nil {
		t.Fatal(err)
	}
	for m := 1; m <= 90; m++ {
		if err := b.PutAliases(ctx, all[:100], t0.Add(time.Duration(m)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// Two aliases with entries of the older form, one per alias: one
	// expired by then, one renewed.
	old := func(fp string, exp int64) {
		key := boltAliasKey(AliasFP{FeedID: "f2", FP: fp})
		err := b.db.Update(func(tx *bolt.Tx) error {
			if err := tx.Bucket(bAliases).Put(key, fmt.Appendf(nil, "f2/x|story||%d", exp)); err != nil {
				return err
			}
			return tx.Bucket(bAliasExp).Put(append(binary.BigEndian.AppendUint64(nil, uint64(t0.UnixMilli()+time.Hour.Milliseconds())), key...), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	old("u:old-expired", t0.UnixMilli()+time.Hour.Milliseconds())
	old("u:old-renewed", t0.Add(10*time.Hour).UnixMilli())

	checkNotedOnce(t, b, 302, "before the purge (renewals write no entry)")

	// Past the first 200's expiry (t0+2h, rounded up to the hour), before
	// the renewed ones' (t0+1.5h+2h): each put purges a bounded number.
	at := t0.Add(3*time.Hour + 10*time.Minute)
	for range 3 {
		if err := b.PutAliases(ctx, []Alias{ownAlias("f3", "u:late", "e", ttl)}, at); err != nil {
			t.Fatal(err)
		}
	}
	aliases, noted, _ := aliasState(t, b)
	for i, a := range all {
		key := string(boltAliasKey(a.AliasFP))
		_, kept := aliases[key]
		if renewed := i < 100; kept != renewed {
			t.Errorf("alias %d kept %v after the purge, want %v", i, kept, renewed)
		}
		if kept && noted[key] != 1 {
			t.Errorf("renewed alias %d noted %d times, want once", i, noted[key])
		}
	}
	if _, ok := aliases[string(boltAliasKey(AliasFP{FeedID: "f2", FP: "u:old-expired"}))]; ok {
		t.Error("expired alias with an entry of the older form kept")
	}
	if k := string(boltAliasKey(AliasFP{FeedID: "f2", FP: "u:old-renewed"})); noted[k] != 1 {
		t.Errorf("renewed alias with an entry of the older form: stored %v, noted %d times, want kept and noted once", aliases[k] != 0, noted[k])
	}
	found, err := b.LookupAliases(ctx, []AliasFP{all[0].AliasFP, all[200].AliasFP}, at)
	if err != nil {
		t.Fatal(err)
	}
	if !found[0].Found || found[1].Found {
		t.Errorf("look-ups after the purge: renewed %v, expired %v; want true, false", found[0].Found, found[1].Found)
	}

	// Later still, everything has expired: the next puts purge the rest.
	late := t0.Add(20 * time.Hour)
	for range 3 {
		if err := b.PutAliases(ctx, []Alias{ownAlias("f4", "u:last", "e", ttl)}, late); err != nil {
			t.Fatal(err)
		}
	}
	aliases, _, entries := aliasState(t, b)
	if len(aliases) != 1 || entries != 1 {
		t.Errorf("after everything expired: %d aliases and %d index entries left, want 1 and 1 (the last put's)", len(aliases), entries)
	}
}

// TestCompareAliasKeys checks the comparison of alias keys against
// bytes.Compare of the keys themselves, on feed ids that are prefixes of
// one another, hold NUL or high bytes, and the empty scope (across feeds).
func TestCompareAliasKeys(t *testing.T) {
	feeds := []string{"", "a", "ab", "a\x00", "a\x00b", "b", "\xff", "a\xff", "feed-1", "feed-10", "feed-1\x01"}
	fps := []string{"u:1", "u:10", "t:1", "\x01", "\xff", "a"}
	var all []AliasFP
	for _, f := range feeds {
		for _, fp := range fps {
			all = append(all, AliasFP{FeedID: f, FP: fp})
		}
	}
	for _, a := range all {
		for _, b := range all {
			if got, want := compareAliasKeys(a, b), bytes.Compare(boltAliasKey(a), boltAliasKey(b)); got != want {
				t.Errorf("compareAliasKeys(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestBoltAliasExpiryNotedByMerges: aliases across feeds reach the bucket
// only by a merge of the overlay (when enough wait, and at open, replaying
// what a crash left in the log); each is noted in the expiry index once,
// and renewed ones are not noted again.
func TestBoltAliasExpiryNotedByMerges(t *testing.T) {
	b, path := openFileBolt(t)
	b.mergeAt = 8
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	reserve := func(b *Bolt, from, to int, at time.Time) {
		t.Helper()
		var as []Alias
		for i := from; i < to; i++ {
			as = append(as, acrossAlias(fmt.Sprintf("u:%03d", i), "f1", fmt.Sprintf("e%d", i)))
		}
		if _, err := b.ReserveAliases(ctx, as, at); err != nil {
			t.Fatal(err)
		}
		if err := b.PutAliases(ctx, as, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i += 5 {
		reserve(b, i, i+5, now.Add(time.Duration(i)*time.Minute))
	}
	reserve(b, 0, 10, now.Add(time.Hour)) // renewals, merged too
	b = commitCrashReopen(t, b, path)     // what waits is replayed at open
	checkNotedOnce(t, b, 40, "after the merges and the replay")
}

// TestBoltAliasPurgeSkipsBadEntries: an entry of the expiry index that
// cannot be read (a length past its end, a key too short to hold an
// hour) is dropped by the purge; the write carrying aliases goes on.
func TestBoltAliasPurgeSkipsBadEntries(t *testing.T) {
	b, _ := openFileBolt(t)
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	err := b.db.Update(func(tx *bolt.Tx) error {
		ex, err := tx.CreateBucketIfNotExists(bAliasExp)
		if err != nil {
			return err
		}
		bad := append(binary.BigEndian.AppendUint64(nil, uint64(now.UnixMilli()-1)), 0xFF, 0, 0, 0, 0, 0, 0, 0, 1)
		return errors.Join(ex.Put(bad, []byte{5, 'a'}), ex.Put([]byte{0}, []byte{1, 'a'}))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PutAliases(ctx, []Alias{ownAlias("f1", "u:1", "e", time.Hour)}, now); err != nil {
		t.Fatalf("put with unreadable expiry entries waiting: %v", err)
	}
	aliases, _, entries := aliasState(t, b)
	if len(aliases) != 1 || entries != 1 {
		t.Errorf("%d aliases and %d index entries, want 1 and 1 (the unreadable entries dropped)", len(aliases), entries)
	}
}
