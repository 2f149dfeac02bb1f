package history_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/history"
)

// fields is every group, in a Digest's order.
func fields() []history.Field {
	var out []history.Field
	for f := history.FieldType; f <= history.FieldNeed; f++ {
		out = append(out, f)
	}
	return out
}

// TestDigestStoredForm: a Digest's stored form is what the digest was
// before it was held as numbers, a map of the eleven group names to
// fmt's %06x of the low 24 bits of each hash; and an Update's JSON (what
// the Redis script reads) is byte for byte what it was with that map.
func TestDigestStoredForm(t *testing.T) {
	t.Parallel()
	names := []string{"type", "title", "summary", "body", "image", "link", "dates", "categories", "settings", "event", "need"}
	sums := []uint32{0, 1, 0xabcdef, 0xffffffff, 0x1000000, 0x0f0f0f, 0x123456, 0xdeadbeef, 42, 0xffffff, 0x800000}
	var d history.Digest
	want := map[string]string{}
	for i, f := range fields() {
		if f.String() != names[i] {
			t.Errorf("field %d is named %q, want %q", i, f, names[i])
		}
		d.Set(f, sums[i])
		want[names[i]] = fmt.Sprintf("%06x", sums[i]&0xffffff)
	}
	if diff := cmp.Diff(want, d.Map()); diff != "" {
		t.Errorf("Map() (-want +got):\n%s", diff)
	}
	if (history.Digest{}).Map() != nil || !(history.Digest{}).IsZero() || d.IsZero() {
		t.Errorf("the zero Digest is not none, or a set one is")
	}

	// The Update as it was, the digest a map.
	type before struct {
		ID     string            `json:"id"`
		Title  string            `json:"ti,omitempty"`
		Link   string            `json:"l,omitempty"`
		GUID   string            `json:"g,omitempty"`
		Seen   bool              `json:"seen,omitempty"`
		Digest map[string]string `json:"dg,omitempty"`
		Event  history.Event     `json:"e"`
	}
	ev := history.Event{Kind: history.Changed, At: ms(0)}
	for name, c := range map[string]struct {
		got  history.Update
		want before
	}{
		"with a digest": {history.Update{ID: "x", Title: "T <b>", Seen: true, Digest: d, Event: ev}, before{ID: "x", Title: "T <b>", Seen: true, Digest: want, Event: ev}},
		"without":       {history.Update{ID: "x", Event: ev}, before{ID: "x", Event: ev}},
	} {
		got, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		was, err := json.Marshal(c.want)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(was) {
			t.Errorf("%s: JSON %s, was %s", name, got, was)
		}
	}
}

// TestOldRecordCompares: a record written by a version that held digests
// as maps (put into each store as that version laid it out) loads, and a
// new update compares against it by group: the changed title is named, an
// unchanged digest names nothing and leaves the record's as it was.
func TestOldRecordCompares(t *testing.T) {
	t.Parallel()
	// Written by the previous version: all eleven groups, %06x each.
	const old = `{"id":"x1","ti":"First","l":"https://e.com/1","f0":%d,"f1":%d,` +
		`"dg":{"body":"0b0b0b","categories":"000000","dates":"d0d0d0","event":"e0e0e0","image":"000001","link":"0a0a0a",` +
		`"need":"000000","settings":"5e5e5e","summary":"50aa50","title":"7171e0","type":"000002"},` +
		`"ev":[{"k":"queued","t":%d},{"k":"published","t":%d,"id":42}]}`
	record := fmt.Sprintf(old, ms(0), ms(0), ms(0), ms(1000))
	sums := map[history.Field]uint32{
		history.FieldBody: 0x0b0b0b, history.FieldDates: 0xd0d0d0, history.FieldEvent: 0xe0e0e0, history.FieldImage: 1,
		history.FieldLink: 0x0a0a0a, history.FieldSettings: 0x5e5e5e, history.FieldSummary: 0x50aa50, history.FieldTitle: 0x7171e0,
		history.FieldType: 2,
	}
	same := digestOf(sums)
	sums[history.FieldTitle] = 0x7171e1
	edited := digestOf(sums)

	check := func(t *testing.T, s history.Store) {
		ctx := t.Context()
		steps := []history.Update{
			{ID: "x1", Seen: true, Digest: same, Event: history.Event{Kind: history.Unchanged, At: ms(60000)}},
			{ID: "x1", Title: "First, fixed", Seen: true, Digest: edited, Event: history.Event{Kind: history.Changed, At: ms(120000)}},
		}
		var stored []map[string]string
		for _, u := range steps {
			if err := s.Write(ctx, []history.Batch{{Feed: "news", Items: []history.Update{u}}}, nil, -1, t0); err != nil {
				t.Fatal(err)
			}
			f, err := s.Feed(ctx, "news")
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Items) != 1 {
				t.Fatalf("items = %+v, want the one record", f.Items)
			}
			stored = append(stored, f.Items[0].Digest)
			if u.Event.Kind == history.Changed {
				want := []history.Event{
					{Kind: history.Queued, At: ms(0)},
					{Kind: history.Published, At: ms(1000), ContentID: 42},
					{Kind: history.Unchanged, At: ms(60000)},
					{Kind: history.Changed, At: ms(120000), Fields: []string{"title"}},
				}
				if diff := cmp.Diff(want, f.Items[0].Events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			}
		}
		var rec history.Item
		if err := json.Unmarshal([]byte(record), &rec); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rec.Digest, stored[0]); diff != "" {
			t.Errorf("digest after an unchanged update (-old +got):\n%s", diff)
		}
		if diff := cmp.Diff(edited.Map(), stored[1]); diff != "" {
			t.Errorf("digest after the change (-want +got):\n%s", diff)
		}
	}

	withRecord(t, "news", "x1", ms(1000), record, check)
}

// TestChangedFieldsOfOtherRecords: against a stored digest that lacks a
// group, or has one this version does not know, both stores name them as
// changed, as they did when both digests were maps.
func TestChangedFieldsOfOtherRecords(t *testing.T) {
	t.Parallel()
	m := digestOf(map[history.Field]uint32{history.FieldTitle: 7}).Map()
	delete(m, "need")
	m["legacy"] = "000000"
	dg, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	record := fmt.Sprintf(`{"id":"x","f0":%d,"dg":%s,"ev":[{"k":"queued","t":%d}]}`, ms(0), dg, ms(0))
	withRecord(t, "f", "x", ms(0), record, func(t *testing.T, s history.Store) {
		ctx := t.Context()
		u := history.Update{ID: "x", Seen: true, Digest: digestOf(nil), Event: history.Event{Kind: history.Changed, At: ms(1000)}}
		if err := s.Write(ctx, []history.Batch{{Feed: "f", Items: []history.Update{u}}}, nil, -1, t0); err != nil {
			t.Fatal(err)
		}
		f, err := s.Feed(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Items) != 1 {
			t.Fatalf("items = %+v, want the one record", f.Items)
		}
		if got, want := f.Items[0].Last().Fields, []string{"legacy", "need", "title"}; !slices.Equal(got, want) {
			t.Errorf("fields = %v, want %v", got, want)
		}
	})
}

// withRecord runs fn against each store holding one item record of feed
// as earlier versions stored it (record: its JSON; act: its activity).
func withRecord(t *testing.T, feed, id string, act int64, record string, fn func(t *testing.T, s history.Store)) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		c, prefix := dedupetest.Redis(t)
		s := history.NewRedis(c, prefix, history.Limits{})
		keys := s.Keys(feed)
		if err := c.HSet(t.Context(), keys[0], id, record).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(t.Context(), keys[1], redis.Z{Score: float64(act), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		db := openBolt(t)
		// history/feeds/FEED/{items,order}, as bolt.go lays them out.
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("history"))
			for _, name := range []string{"feeds", feed} {
				if err != nil {
					return err
				}
				b, err = b.CreateBucketIfNotExists([]byte(name))
			}
			if err != nil {
				return err
			}
			items, err := b.CreateBucketIfNotExists([]byte("items"))
			if err != nil {
				return err
			}
			order, err := b.CreateBucketIfNotExists([]byte("order"))
			if err != nil {
				return err
			}
			if err := items.Put([]byte(id), []byte(record)); err != nil {
				return err
			}
			return order.Put(append(binary.BigEndian.AppendUint64(nil, uint64(act)), id...), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, history.NewBolt(db, history.Limits{}))
	})
}
