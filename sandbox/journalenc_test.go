package sandbox

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestAppendEntry: the hand-written journal entry reads back as the
// json.Marshal of the same entry (the format journals were written in
// before, which a data file may still hold).
func TestAppendEntry(t *testing.T) {
	t.Parallel()
	st := newState()
	st.next[collContent] = 5
	st.colls[collContent][3] = &record{ID: 3, Type: "story", Modified: "2026-01-02 03:04:05", Fields: map[string]any{
		"title":       "a \"title\" <b>",
		"body":        "<p>caf\xc3\xa9 \xff</p>\n",
		"external_id": "x-1",
		"categories":  []int64{4, 2},
		"segments":    []int64{},
		"private":     true,
		"author":      int64(7),
	}}
	st.next[collBlast] = 2
	st.colls[collBlast][1] = &record{ID: 1, Modified: "2026-01-02 03:04:05", Fields: map[string]any{
		"name":               "b",
		"status":             int64(1),
		"blast_merge_fields": []mergeField{{ID: 1, Type: idObject{ID: 2}, Value: "v"}},
		"target_segments":    []int64{1},
	}}
	st.tokens["abc"] = time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
	st.tokensDirty = true
	st.dirty = map[ref]bool{{collContent, 3}: true, {collBlast, 1}: true, {collContent, 4}: true}

	// What entryLocked wrote before: each field marshalled, then the entry.
	old := journalEntry{NextID: st.next, Del: []journalRef{{collContent, 4}}}
	for _, r := range []ref{{collContent, 3}, {collBlast, 1}} {
		dr, err := encodeRecord(r.coll, st.colls[r.coll][r.id])
		if err != nil {
			t.Fatal(err)
		}
		old.Put = append(old.Put, journalRecord{Coll: r.coll, diskRecord: dr})
	}
	old.Tokens = []diskToken{{SHA256: "abc", Expires: st.tokens["abc"]}}
	oldJSON, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}

	newJSON, err := appendEntry(nil, st)
	if err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) journalEntry {
		t.Helper()
		line := appendLine(nil, b)
		e, err := parseJournalLine(line[:len(line)-1])
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		slices.SortFunc(e.Put, func(a, b journalRecord) int { return cmp.Compare(a.Coll, b.Coll) })
		// Fields compare as values, not as their spelling.
		for _, p := range e.Put {
			for k, raw := range p.Fields {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				p.Fields[k], _ = json.Marshal(v)
			}
		}
		return e
	}
	if got, want := read(newJSON), read(oldJSON); !reflect.DeepEqual(got, want) {
		t.Errorf("appendEntry reads back as\n%+v\nwant\n%+v\n(%s)", got, want, newJSON)
	}

	// And it replays to the records the old entry replays to.
	replay := func(b []byte) *state {
		t.Helper()
		st := newState()
		if err := applyEntry(read(b), st, newSchemas("example.com")); err != nil {
			t.Fatal(err)
		}
		return st
	}
	got, want := replay(newJSON), replay(oldJSON)
	if !reflect.DeepEqual(got.colls, want.colls) || !reflect.DeepEqual(got.next, want.next) || !reflect.DeepEqual(got.tokens, want.tokens) {
		t.Errorf("replays as %+v, want %+v", got, want)
	}
	if len(got.colls[collContent]) != 1 || len(got.colls[collBlast]) != 1 {
		t.Errorf("replayed %d contents and %d blasts, want 1 and 1", len(got.colls[collContent]), len(got.colls[collBlast]))
	}
}
