package dedupe

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
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
	for _, c := range []struct {
		name  string
		data  []byte
		codec byte
	}{
		{"html", []byte(strings.Repeat(`{"title":"t","body":"<p>some text</p>"}`, 100)), payloadS2},
		{"noise", noise, payloadRaw},
		{"empty", []byte{}, payloadRaw},
	} {
		v := encodePayload(c.data)
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
	if _, err := decodePayload([]byte{9, 'x'}); err == nil {
		t.Error("a value of codec 9 decoded; want an error")
	}
	if _, err := decodePayload(nil); err == nil {
		t.Error("an empty value decoded; want an error")
	}
}

// TestBoltPayloadOldFile: payloads a file written before keeps raw in the
// "data" bucket are still claimed, listed as dead letters and dropped at
// settle; an entry enqueued again moves to the payload bucket.
func TestBoltPayloadOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
	// The file as an older version wrote it: raw payloads in "data", no
	// "payload" bucket.
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
		return tx.DeleteBucket(bPayload)
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
	// c enqueued again with a new payload: in the payload bucket, and no
	// longer in the old one.
	c2 := Change{ExternalID: "c", Hash: "h2", Type: "story", Action: ActionPublish, Data: []byte(`{"item":"c2"}`)}
	if _, err := b.Commit(ctx, "f", []Change{c2}, nil, now); err != nil {
		t.Fatal(err)
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		old, cur := tx.Bucket(bData), tx.Bucket(bPayload)
		for _, c := range []struct {
			member   string
			old, cur bool
		}{{"f/a", false, false}, {"f/b", true, false}, {"f/c", false, true}} {
			if got := old.Get([]byte(c.member)) != nil; got != c.old {
				t.Errorf("%s in the old data bucket: %v, want %v", c.member, got, c.old)
			}
			if got := cur.Get([]byte(c.member)) != nil; got != c.cur {
				t.Errorf("%s in the payload bucket: %v, want %v", c.member, got, c.cur)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	claimed, _, err = b.Claim(ctx, "w", 3, time.Minute, now.Add(time.Second))
	if err != nil || len(claimed) != 1 || claimed[0].Data != `{"item":"c2"}` {
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
