package dedupe

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestPayloadCodec: a payload comes back as it went in, compressed when
// that is smaller, stored as it is otherwise; a value of an unknown codec
// is an error, not a payload.
func TestPayloadCodec(t *testing.T) {
	noise := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	cases := []struct {
		name  string
		data  []byte
		codec byte
	}{
		{"html", []byte(strings.Repeat(`{"title":"t","body":"<p>some text</p>"}`, 100)), payloadS2},
		{"noise", noise, payloadRaw},
		{"empty", []byte{}, payloadRaw},
		{"html again", []byte(strings.Repeat(`<p>other text</p>`, 50)), payloadS2},
	}
	var scratch []byte
	var stored [][]byte
	for _, c := range cases {
		v := encodePayload(&scratch, c.data)
		stored = append(stored, v)
		if v[0] != c.codec {
			t.Errorf("%s: codec %d, want %d", c.name, v[0], c.codec)
		}
		if c.codec == payloadS2 && len(v) >= len(c.data) {
			t.Errorf("%s: stored %d bytes of %d, want fewer", c.name, len(v), len(c.data))
		}
		got, err := decodePayload(v)
		if err != nil || !bytes.Equal(got, c.data) || got == nil {
			t.Errorf("%s: decoded %d bytes, %v; want the %d given", c.name, len(got), err, len(c.data))
		}
	}
	// Each value is its own: encoding the next one, in the same scratch,
	// changed none before it (bbolt holds them until the commit).
	for i, v := range stored {
		if got, err := decodePayload(v); err != nil || !bytes.Equal(got, cases[i].data) {
			t.Errorf("%s: after the later encodings, decoded %d bytes, %v", cases[i].name, len(got), err)
		}
	}
	if _, err := decodePayload([]byte{9, 'x'}); err == nil {
		t.Error("a value of codec 9 decoded; want an error")
	}
	if _, err := decodePayload(nil); err == nil {
		t.Error("an empty value decoded; want an error")
	}
}

// TestBoltPayloadOldFile: payloads a file written before codec bytes keeps
// raw in the "data" bucket are still claimed, listed as dead letters and
// dropped at settle; an entry enqueued again is stored compressed.
func TestBoltPayloadOldFile(t *testing.T) {
	b, path := openFileBolt(t)
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	data := func(ext string) []byte { return []byte(strings.Repeat(`{"item":"`+ext+`"}`, 50)) }
	var changes []Change
	for _, ext := range []string{"a", "b", "c"} {
		changes = append(changes, Change{ExternalID: ext, Hash: "h1", Type: "story", Action: ActionPublish, Data: data(ext)})
	}
	if _, err := b.Commit(ctx, "f", changes, nil, now); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The file as an older version wrote it: raw payloads in "data".
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		old := tx.Bucket(bData)
		for _, ext := range []string{"a", "b", "c"} {
			if err := old.Put([]byte("f/"+ext), data(ext)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	claimed, _, err := b.Claim(ctx, "w", 3, time.Minute, now)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim of an old file's entries = %d, %v; want 3", len(claimed), err)
	}
	for _, c := range claimed {
		if c.Data != string(data(c.Key.ExternalID)) {
			t.Errorf("claimed %s with data %q; want the old file's", c.Key, c.Data)
		}
	}
	settle := func(ext string, s Settlement) {
		t.Helper()
		if held, err := b.Settle(ctx, Key{"f", ext}, "w", s, now); err != nil || !held {
			t.Fatalf("settle %s = %v, %v; want held", ext, held, err)
		}
	}
	settle("a", Settlement{Kind: Delivered, ContentID: 1, Type: "story", Hash: "h1"})
	settle("b", Settlement{Kind: Dead, Status: 400, Reason: "bad"})
	settle("c", Settlement{Kind: Release})
	dl, err := b.DeadLetters(ctx)
	if err != nil || len(dl) != 1 || string(dl[0].Data) != string(data("b")) {
		t.Fatalf("dead letters = %+v, %v; want b with the old file's data", dl, err)
	}
	// c enqueued again with a new payload: stored with its codec byte.
	c2 := Change{ExternalID: "c", Hash: "h2", Type: "story", Action: ActionPublish, Data: []byte(strings.Repeat(`{"item":"c2"}`, 50))}
	if _, err := b.Commit(ctx, "f", []Change{c2}, nil, now); err != nil {
		t.Fatal(err)
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		bucket := tx.Bucket(bData)
		if v := bucket.Get([]byte("f/a")); v != nil {
			t.Errorf("a's payload left after its delivery: %q", v)
		}
		if v := bucket.Get([]byte("f/b")); string(v) != string(data("b")) {
			t.Errorf("b's dead letter payload = %q, want the old file's", v)
		}
		if v := bucket.Get([]byte("f/c")); len(v) == 0 || v[0] != payloadS2 {
			t.Errorf("c enqueued again is stored as %q, want S2 with its codec byte", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	claimed, _, err = b.Claim(ctx, "w", 3, time.Minute, now.Add(time.Second))
	if err != nil || len(claimed) != 1 || claimed[0].Data != string(c2.Data) {
		t.Fatalf("claim after c was enqueued again = %+v, %v; want c with its new data", claimed, err)
	}
	// Retried, the dead letter keeps its old payload until delivered.
	if n, err := b.RetryDeadLetters(ctx, now); err != nil || n != 1 {
		t.Fatalf("retry dead letters = %d, %v; want 1", n, err)
	}
	claimed, _, err = b.Claim(ctx, "w2", 3, time.Minute, now.Add(time.Second))
	if err != nil || len(claimed) != 1 || claimed[0].Data != string(data("b")) {
		t.Fatalf("claim of the retried dead letter = %+v, %v; want b with the old file's data", claimed, err)
	}
	settleW2 := Settlement{Kind: Delivered, ContentID: 2, Type: "story", Hash: "h1"}
	if held, err := b.Settle(ctx, Key{"f", "b"}, "w2", settleW2, now); err != nil || !held {
		t.Fatalf("settle b = %v, %v; want held", held, err)
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bData).Get([]byte("f/b")) != nil {
			t.Error("b's old payload left after its delivery")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBoltPayloadUnreadable: an entry whose payload this worker cannot
// read (a newer codec, a damaged page) becomes a dead letter naming the
// cause at the claim, kept for a worker that can read it, and the dead
// letters still list, that one without data.
func TestBoltPayloadUnreadable(t *testing.T) {
	b, _ := openFileBolt(t)
	var err error
	defer b.Close()
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	changes := []Change{
		{ExternalID: "a", Hash: "h1", Type: "story", Action: ActionPublish, Data: []byte(`{"item":"a"}`)},
		{ExternalID: "b", Hash: "h1", Type: "story", Action: ActionPublish, Data: []byte(`{"item":"b"}`)},
	}
	if _, err := b.Commit(ctx, "f", changes, nil, now); err != nil {
		t.Fatal(err)
	}
	err = b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bData).Put([]byte("f/a"), []byte{9, 'x'}) })
	if err != nil {
		t.Fatal(err)
	}
	claimed, _, err := b.Claim(ctx, "w", 5, time.Minute, now)
	if err != nil || len(claimed) != 1 || claimed[0].Key.ExternalID != "b" {
		t.Fatalf("claim = %+v, %v; want b only", claimed, err)
	}
	dl, err := b.DeadLetters(ctx)
	if err != nil {
		t.Fatalf("dead letters with an unreadable payload: %v", err)
	}
	if len(dl) != 1 || dl[0].Key.ExternalID != "a" || dl[0].Data != nil ||
		!strings.Contains(dl[0].Reason, "f/a") || !strings.Contains(dl[0].Reason, "unknown codec 9") {
		t.Fatalf("dead letters = %+v; want a, without data, its reason naming it and the codec", dl)
	}
	st, err := b.Stats(ctx, now)
	if err != nil || st.Due != 1 || st.DeadLetters != 1 {
		t.Fatalf("stats = %+v, %v; want b due (claimed) and a dead letter", st, err)
	}
}
