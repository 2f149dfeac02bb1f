package dedupe

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestBoltAliasPutRolledBack: aliases across feeds put by a write that
// then fails are nowhere, neither in memory nor, after one more commit, a
// crash and an open, in the file: a first sight of them would point at
// items never recorded.
func TestBoltAliasPutRolledBack(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	boom := errors.New("boom")
	lost := []Alias{acrossAlias("u:lost", "f1", "a"), acrossAlias("g:lost", "f1", "a")}
	err = b.update(ctx, "put then fail", func(tx *bolt.Tx) error {
		if err := b.putAliasesTx(tx, lost, ms(now)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write: %v, want boom", err)
	}
	fps := []AliasFP{lost[0].AliasFP, lost[1].AliasFP}
	checkNotFound := func(when string) {
		t.Helper()
		got, err := b.LookupAliases(ctx, fps, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Found {
				t.Errorf("%s: %s = %+v, put by a write rolled back", when, g.FP, g)
			}
		}
	}
	checkNotFound("in memory")
	b = commitCrashReopen(t, b, path)
	checkNotFound("after a crash")
}

// TestBoltAliasPutGroupRetried: a group of writes rolled back for one
// failing write runs each again alone. The aliases of the failing one are
// nowhere; those of the other are, once, with the value it put.
func TestBoltAliasPutGroupRetried(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	// A committer whose held writes wait for company for longer than the
	// test runs: the held write and the next one share a transaction.
	b.group.close()
	held := make(chan struct{}, 1)
	b.group = startGroupCommitter(b.db, time.Hour, func() { held <- struct{}{} }, b.aliases)
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	good := []Alias{acrossAlias("u:good", "f1", "a")}
	bad := []Alias{acrossAlias("u:bad", "f2", "b")}
	boom := errors.New("boom")
	goodDone := make(chan error, 1)
	runs := 0
	go func() {
		goodDone <- b.updateLater(ctx, "good", func(tx *bolt.Tx) error {
			runs++
			return b.putAliasesTx(tx, good, ms(now))
		})
	}()
	<-held
	err = b.update(ctx, "bad", func(tx *bolt.Tx) error {
		if err := b.putAliasesTx(tx, bad, ms(now)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write: %v, want boom", err)
	}
	if err := <-goodDone; err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("the good write ran %d times; want 2 (in the group, then alone)", runs)
	}
	b = crashAndReopen(t, b, path)
	got, err := b.LookupAliases(ctx, []AliasFP{good[0].AliasFP, bad[0].AliasFP}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Found || got[0].Target != (Key{"f1", "a"}) {
		t.Errorf("the good write's alias after a crash = %+v; want held by f1/a", got[0])
	}
	if got[1].Found {
		t.Errorf("the failing write's alias after a crash = %+v; want none", got[1])
	}
}

// TestBoltAliasReservedWhileStaged: a reservation made while a
// transaction has staged a put of the same alias (it does not see it)
// stands, in memory and, after a crash, in the file; the put is dropped.
func TestBoltAliasReservedWhileStaged(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	// The reservation runs inside the committer's transaction: a merge
	// due then would wait for that transaction for ever.
	b.mergeAt, b.mergeLogBytes = math.MaxInt, math.MaxInt
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	put, reserved := acrossAlias("u:1", "f1", "a"), acrossAlias("u:1", "f2", "b")
	var held []Alias
	err = b.update(ctx, "put", func(tx *bolt.Tx) error {
		if err := b.putAliasesTx(tx, []Alias{put}, ms(now)); err != nil {
			return err
		}
		// As another feed's fetch would, while this transaction runs.
		held, err = b.ReserveAliases(ctx, []Alias{reserved}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if held[0].Target != reserved.Target {
		t.Fatalf("reservation while the put was staged got %v; want %v", held[0].Target, reserved.Target)
	}
	check := func(when string) {
		t.Helper()
		got, err := b.LookupAliases(ctx, []AliasFP{put.AliasFP}, now)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Target != reserved.Target || !got[0].Since.Equal(now) {
			t.Errorf("%s: %+v; want the reservation's, %v since %v", when, got[0], reserved.Target, now)
		}
	}
	check("in memory")
	b = commitCrashReopen(t, b, path)
	check("after a crash")
}

// TestBoltAliasReservedBeforeCommit: a reservation that changes an alias
// after finish logged a put of it, before that transaction commits (other
// feeds reserve while the fsync runs), stands in memory as it does in the
// file after a crash (its record comes after the put's); the put is
// dropped when the transaction commits.
func TestBoltAliasReservedBeforeCommit(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	// The hook holds the committer: a merge due at the reservation would
	// wait for it for ever.
	b.mergeAt, b.mergeLogBytes = math.MaxInt, math.MaxInt
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	put, reserved := acrossAlias("u:1", "f1", "a"), acrossAlias("u:1", "f2", "b")
	var held []Alias
	var reserveErr error
	b.aliases.afterFinish = func() {
		b.aliases.afterFinish = nil
		// Another feed's fetch, while this transaction commits.
		done := make(chan struct{})
		go func() {
			defer close(done)
			held, reserveErr = b.ReserveAliases(ctx, []Alias{reserved}, now)
		}()
		<-done
	}
	err = b.update(ctx, "put", func(tx *bolt.Tx) error {
		return b.putAliasesTx(tx, []Alias{put}, ms(now))
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.aliases.afterFinish != nil {
		t.Fatal("the hook after finish did not run")
	}
	if reserveErr != nil {
		t.Fatal(reserveErr)
	}
	if held[0].Target != reserved.Target {
		t.Fatalf("reservation before the put's commit got %v; want %v", held[0].Target, reserved.Target)
	}
	check := func(when string) {
		t.Helper()
		got, err := b.LookupAliases(ctx, []AliasFP{put.AliasFP}, now)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Target != reserved.Target {
			t.Errorf("%s: %+v; want the reservation's, %v", when, got[0], reserved.Target)
		}
	}
	check("in memory")
	b = commitCrashReopen(t, b, path)
	check("after a crash")
}

// logSize counts the alias log's records and bytes in b's file.
func logSize(t *testing.T, b *Bolt) (records, size int) {
	t.Helper()
	err := b.db.View(func(tx *bolt.Tx) error {
		lb := tx.Bucket(bAliasLog)
		if lb == nil {
			return nil
		}
		return lb.ForEach(func(_, v []byte) error {
			records++
			size += len(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return records, size
}

// TestBoltAliasLogBounded: commits renewing the same few aliases, many
// times over, log them each time; a merge comes once the log is large
// enough, however few keys wait, and the log stays bounded.
func TestBoltAliasLogBounded(t *testing.T) {
	b, _ := openFileBolt(t)
	defer b.Close()
	const limit = 4096
	b.mergeLogBytes = limit
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	var aliases []Alias
	for i := range 8 {
		aliases = append(aliases, acrossAlias(fmt.Sprintf("u:%d", i), "f1", fmt.Sprintf("e%d", i)))
	}
	maxSize := 0
	for round := range 200 {
		// A later time each round: every alias is renewed, so logged.
		if err := b.PutAliases(ctx, aliases, now.Add(time.Duration(round)*time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, size := logSize(t, b)
		maxSize = max(maxSize, size)
	}
	b.aliases.mu.Lock()
	merges := b.aliases.merges
	b.aliases.mu.Unlock()
	if merges == 0 {
		t.Error("no merge after 200 rounds of renewals")
	}
	// A merge is due once limit bytes are logged, and comes with the next
	// put: one record more than the limit at most.
	if maxSize > limit+2*len(aliases)*aliasValueSize {
		t.Errorf("the log reached %d bytes with a merge due at %d", maxSize, limit)
	}
}

// TestBoltCloseWaitsForMerge: Close while a merge waits for the committer
// waits for that merge, which ends well, then leaves no log record.
func TestBoltCloseWaitsForMerge(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	b.mergeAt = 4
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	reserve := func(i int) error {
		a := acrossAlias(fmt.Sprintf("u:%02d", i), "f1", fmt.Sprintf("e%02d", i))
		_, err := b.ReserveAliases(ctx, []Alias{a}, now)
		return err
	}
	// Reserved and not logged (no commit since): the merge's transaction
	// logs nothing of them, as it merges them.
	var fps []AliasFP
	for i := range 4 {
		fps = append(fps, AliasFP{FP: fmt.Sprintf("u:%02d", i)})
		if err := reserve(i); err != nil {
			t.Fatal(err)
		}
	}
	// The committer is held by a write until release: the merge the next
	// reservation starts waits for it.
	release, busy := make(chan struct{}), make(chan struct{})
	blockDone := make(chan error, 1)
	go func() {
		blockDone <- b.update(ctx, "block", func(*bolt.Tx) error { close(busy); <-release; return nil })
	}()
	<-busy
	var wg sync.WaitGroup
	var mergeErr, closeErr error
	// The check a reservation (or a put) makes first.
	wg.Go(func() { mergeErr = b.mergeAliasesIfDue(ctx) })
	for deadline := time.Now().Add(30 * time.Second); ; {
		b.aliases.mu.Lock()
		merging := b.aliases.merging
		b.aliases.mu.Unlock()
		if merging {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no merge started")
		}
		time.Sleep(time.Millisecond)
	}
	// Close must wait for the merge: release the committer only once it
	// does, so that a Close that goes on at once (stopping the committer,
	// which then waits for the held write) is seen every time.
	waiting := make(chan struct{})
	var once sync.Once
	b.beforeMergeWait = func() { once.Do(func() { close(waiting) }) }
	closed := make(chan struct{})
	go func() { defer close(closed); closeErr = b.Close() }()
	select {
	case <-waiting:
	case <-b.group.quit:
		t.Error("Close stopped the committer while a merge was under way")
	case <-closed:
		t.Error("Close returned while a merge was under way")
	}
	close(release)
	<-closed
	wg.Wait()
	if err := <-blockDone; err != nil {
		t.Fatal(err)
	}
	if mergeErr != nil {
		t.Errorf("merge under way at Close: %v", mergeErr)
	}
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	if n := logRecords(t, path); n != 0 {
		t.Errorf("%d alias log records after Close; want none", n)
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if !g.Found {
			t.Errorf("%s not found after Close and open", fps[i].FP)
		}
	}
}

// TestBoltReserveReadsBucketUnlocked: a reservation reads the bucket
// without the overlay's lock, and if a merge moved keys into the bucket
// meanwhile it reads again: an alias reserved and merged during its read
// still wins against it.
func TestBoltReserveReadsBucketUnlocked(t *testing.T) {
	b, _ := openFileBolt(t)
	var err error
	defer b.Close()
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	first := acrossAlias("u:1", "f1", "a")
	b.afterAliasRead = func() {
		b.afterAliasRead = nil
		if !b.aliases.mu.TryLock() {
			t.Error("the overlay's lock is held across the bucket's read")
		} else {
			b.aliases.mu.Unlock()
		}
		// Another feed reserves the same alias, and it is merged.
		if _, err := b.ReserveAliases(ctx, []Alias{first}, now); err != nil {
			t.Error(err)
		}
		b.aliases.mu.Lock()
		b.aliases.merging = true
		b.aliases.mu.Unlock()
		if err := b.mergeAliases(ctx); err != nil {
			t.Error(err)
		}
	}
	got, err := b.ReserveAliases(ctx, []Alias{acrossAlias("u:1", "f2", "b")}, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if b.afterAliasRead != nil {
		t.Fatal("the reservation did not read the bucket")
	}
	if got[0].Target != first.Target {
		t.Errorf("reservation during which f1/a reserved and merged the alias got %v; want f1/a", got[0].Target)
	}
}

// TestBoltAliasStageLargeDropped: the stage of a transaction that staged
// many aliases is not kept for the next one (its map would hold its slots
// for the process's life); a small one is reused.
func TestBoltAliasStageLargeDropped(t *testing.T) {
	b, _ := openFileBolt(t)
	defer b.Close()
	b.mergeAt, b.mergeLogBytes = math.MaxInt, math.MaxInt
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	put := func(n int) {
		t.Helper()
		aliases := make([]Alias, n)
		for i := range aliases {
			aliases[i] = acrossAlias(fmt.Sprintf("u:%d:%d", n, i), "f1", fmt.Sprintf("e%d", i))
		}
		if err := b.PutAliases(ctx, aliases, now); err != nil {
			t.Fatal(err)
		}
	}
	stageNil := func() bool {
		b.aliases.mu.Lock()
		defer b.aliases.mu.Unlock()
		return b.aliases.stage.m == nil
	}
	put(stageKeepMax + 1)
	if err := b.update(ctx, "empty", func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !stageNil() {
		t.Errorf("the stage of %d aliases was kept for the next transaction", stageKeepMax+1)
	}
	put(10)
	if err := b.update(ctx, "empty", func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if stageNil() {
		t.Error("the stage of 10 aliases was not kept for the next transaction")
	}
}
