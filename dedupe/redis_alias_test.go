package dedupe_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// failPipelines is a go-redis hook that fails every pipeline while on, before
// it is sent: the Redis store's commit is one command, PutAliases a pipeline.
type failPipelines struct{ on bool }

var errInjected = errors.New("injected pipeline failure")

func (f *failPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *failPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *failPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.on {
			return errInjected
		}
		return next(ctx, cmds)
	}
}

// failCmds fails the commands of a pipeline that match, unsent, and sends
// the rest, as a Cluster does when one node of several is down.
type failCmds struct{ match func(redis.Cmder) bool }

func (f *failCmds) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *failCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *failCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.match == nil {
			return next(ctx, cmds)
		}
		var send []redis.Cmder
		for _, c := range cmds {
			if f.match(c) {
				c.SetErr(errInjected)
			} else {
				send = append(send, c)
			}
		}
		if err := next(ctx, send); err != nil {
			return err
		}
		if len(send) < len(cmds) {
			return errInjected
		}
		return nil
	}
}

// TestRedisCommitAliasesSaysWhichFailed: when only the note's command or
// only the aliases' fails after the commit, the error names that one
// only, and the other is stored.
func TestRedisCommitAliasesSaysWhichFailed(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	fail := &failCmds{}
	c.AddHook(fail)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx, now := t.Context(), time.Now()
	isNote := func(cmd redis.Cmder) bool {
		return cmd.Name() == "set" && strings.Contains(fmt.Sprint(cmd.Args()[1]), "note:")
	}
	across := func(fp string) []dedupe.Alias {
		return []dedupe.Alias{{AliasFP: dedupe.AliasFP{FP: fp}, Target: dedupe.Key{FeedID: "f1", ExternalID: fp}, Type: "story"}}
	}
	notes := []dedupe.NoteWrite{{Name: "newest", Data: []byte("n1")}}

	fail.match = isNote
	out, err := s.CommitAliases(ctx, "f1", []dedupe.Change{change("a", "h", dedupe.ActionPublish)}, nil, across("u:a"), notes, now)
	fail.match = nil
	if !errors.Is(err, dedupe.ErrNotesNotStored) || errors.Is(err, dedupe.ErrAliasesNotStored) || len(out) != 1 {
		t.Errorf("the note's command failing: %v, %v; want one outcome and ErrNotesNotStored only", out, err)
	}
	if got, _ := s.LookupAliases(ctx, []dedupe.AliasFP{{FP: "u:a"}}, now); !got[0].Found {
		t.Error("the alias across feeds was not stored beside the note that failed")
	}

	fail.match = func(cmd redis.Cmder) bool { return !isNote(cmd) }
	out, err = s.CommitAliases(ctx, "f1", []dedupe.Change{change("b", "h", dedupe.ActionPublish)}, nil, across("u:b"), notes, now)
	fail.match = nil
	if !errors.Is(err, dedupe.ErrAliasesNotStored) || errors.Is(err, dedupe.ErrNotesNotStored) || len(out) != 1 {
		t.Errorf("the aliases' commands failing: %v, %v; want one outcome and ErrAliasesNotStored only", out, err)
	}
	if got, ok, err := s.Note(ctx, "f1", "newest"); err != nil || !ok || string(got) != "n1" {
		t.Errorf("note beside the aliases that failed = %q, %v, %v; want n1", got, ok, err)
	}
}

// TestRedisCommitAliases: CommitAliases records what Commit records and
// the aliases as PutAliases does (each for its own TTL), the feed's own
// in the commit's round trip; an invalid alias fails it before anything is
// written; when only the aliases put after the commit fail, the outcomes
// come back with ErrAliasesNotStored.
func TestRedisCommitAliases(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	var rt dedupe.RoundTripCounter
	fail := &failPipelines{}
	c.AddHook(&rt)
	c.AddHook(fail)
	const retention = 48 * time.Hour
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix, Retention: retention})
	ctx, now := t.Context(), time.Now()
	changes := []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}
	as := []dedupe.Alias{
		{AliasFP: dedupe.AliasFP{FeedID: "f1", FP: "u:1"}, Target: dedupe.Key{FeedID: "f1", ExternalID: "a"}, Type: "story", Extra: "t"},
		{AliasFP: dedupe.AliasFP{FeedID: "f1", FP: "b:2"}, Target: dedupe.Key{FeedID: "f1", ExternalID: "a"}, Type: "story", Extra: "ff t", TTL: time.Hour},
		{AliasFP: dedupe.AliasFP{FP: "u:1"}, Target: dedupe.Key{FeedID: "f1", ExternalID: "a"}, Type: "story", Extra: "t"},
	}

	bad := append([]dedupe.Alias{{AliasFP: dedupe.AliasFP{FP: "x|y"}, Target: dedupe.Key{FeedID: "f2", ExternalID: "a"}, Type: "story"}}, as...)
	if _, err := s.CommitAliases(ctx, "f2", changes, &dedupe.Validators{ETag: "e"}, bad, nil, now); !errors.Is(err, dedupe.ErrInvalid) {
		t.Errorf("CommitAliases with an invalid alias: %v, want ErrInvalid", err)
	}
	if _, ok, err := s.Record(ctx, dedupe.Key{FeedID: "f2", ExternalID: "a"}); err != nil || ok {
		t.Errorf("record after a refused CommitAliases: found %v, %v; want none", ok, err)
	}

	out, err := s.CommitAliases(ctx, "f1", changes, &dedupe.Validators{ETag: "e"}, as, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0] != dedupe.OutcomeNew {
		t.Errorf("CommitAliases outcomes = %v, want [%v]", out, dedupe.OutcomeNew)
	}
	if v, ok, err := s.Validators(ctx, "f1"); err != nil || !ok || v.ETag != "e" {
		t.Errorf("validators after CommitAliases = %+v, %v, %v; want etag e", v, ok, err)
	}
	if st := mustStats(t, s, now); st.Outbox != 1 {
		t.Errorf("outbox after CommitAliases = %d; want 1 entry", st.Outbox)
	}
	fps := []dedupe.AliasFP{as[0].AliasFP, as[1].AliasFP, as[2].AliasFP}
	got, err := s.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if !a.Found || a.Target != as[i].Target || a.Type != "story" || a.Extra != as[i].Extra {
			t.Errorf("alias %+v after CommitAliases = %+v; want found for %s, extra %q", as[i].AliasFP, a, as[i].Target, as[i].Extra)
		}
	}
	// Each alias lives for its own TTL, as with PutAliases: the store's
	// retention when it has none.
	for i, want := range []time.Duration{retention, time.Hour} {
		key := s.AliasKey(as[i].AliasFP)
		ttl, err := c.PTTL(ctx, key).Result()
		if err != nil || ttl <= want-time.Minute || ttl > want {
			t.Errorf("TTL of %s = %v, %v; want about %v", key, ttl, err, want)
		}
	}

	// The feed's own aliases cost no round trip of their own.
	own := as[:2]
	more := []dedupe.Change{change("b", "h1", dedupe.ActionPublish)}
	if n := countRT(&rt, func() {
		if _, err := s.CommitAliases(ctx, "f1", more, &dedupe.Validators{ETag: "e"}, own, nil, now); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("CommitAliases with the feed's own aliases: %d round trips; want 1", n)
	}

	// Aliases across feeds are put after the commit: when that fails, the
	// commit stands and says so.
	fail.on = true
	across := []dedupe.Alias{{AliasFP: dedupe.AliasFP{FP: "u:3"}, Target: dedupe.Key{FeedID: "f1", ExternalID: "c"}, Type: "story"}}
	out, err = s.CommitAliases(ctx, "f1", []dedupe.Change{change("c", "h1", dedupe.ActionPublish)}, &dedupe.Validators{ETag: "e"}, append(across, own...), nil, now)
	fail.on = false
	if !errors.Is(err, dedupe.ErrAliasesNotStored) || !errors.Is(err, errInjected) || len(out) != 1 || out[0] != dedupe.OutcomeNew {
		t.Errorf("CommitAliases whose aliases across feeds fail = %v, %v; want [%v] and ErrAliasesNotStored", out, err, dedupe.OutcomeNew)
	}
	if _, ok, err := s.Record(ctx, dedupe.Key{FeedID: "f1", ExternalID: "c"}); err != nil || !ok {
		t.Errorf("record after CommitAliases with ErrAliasesNotStored: found %v, %v; want it", ok, err)
	}

	// Notes are set after the commit too, in the same round trip as the
	// aliases across feeds; when that fails, the commit stands and says
	// which failed.
	notes := []dedupe.NoteWrite{{Name: "newest", Data: []byte("x")}}
	if n := countRT(&rt, func() {
		if _, err := s.CommitAliases(ctx, "f1", []dedupe.Change{change("d", "h1", dedupe.ActionPublish)}, &dedupe.Validators{ETag: "e"}, append(across, own...), notes, now); err != nil {
			t.Fatal(err)
		}
	}); n != 2 {
		t.Errorf("CommitAliases with aliases across feeds and a note: %d round trips; want 2", n)
	}
	fail.on = true
	out, err = s.CommitAliases(ctx, "f1", []dedupe.Change{change("e", "h1", dedupe.ActionPublish)}, &dedupe.Validators{ETag: "e"}, own, notes, now)
	fail.on = false
	if !errors.Is(err, dedupe.ErrNotesNotStored) || errors.Is(err, dedupe.ErrAliasesNotStored) || !errors.Is(err, errInjected) || len(out) != 1 || out[0] != dedupe.OutcomeNew {
		t.Errorf("CommitAliases whose note fails = %v, %v; want [%v] and ErrNotesNotStored only", out, err, dedupe.OutcomeNew)
	}
}

// TestRedisCommitAliasesMany: a fetch with more aliases than one script
// should set has them all put after its commit, and found.
func TestRedisCommitAliasesMany(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx, now := t.Context(), time.Now()
	var as []dedupe.Alias
	var fps []dedupe.AliasFP
	for i := range dedupe.MaxCommitAliases + 1 {
		fp := dedupe.AliasFP{FeedID: "f", FP: fmt.Sprint("u:", i)}
		as = append(as, dedupe.Alias{AliasFP: fp, Target: dedupe.Key{FeedID: "f", ExternalID: "a"}, Type: "story"})
		fps = append(fps, fp)
	}
	if _, err := s.CommitAliases(ctx, "f", []dedupe.Change{change("a", "h", dedupe.ActionPublish)}, nil, as, nil, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if !a.Found {
			t.Fatalf("alias %d of %d not found after CommitAliases", i, len(got))
		}
	}
}

// TestClusterCommitAliases: on a Redis Cluster, the feed's aliases set by
// the commit's script land in its slot, where LookupAliases finds them,
// and those across feeds in theirs.
func TestClusterCommitAliases(t *testing.T) {
	c, prefix := dedupetest.Cluster(t)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx, now := t.Context(), time.Now()
	var as []dedupe.Alias
	var fps []dedupe.AliasFP
	for i := range 20 {
		for _, feed := range []string{"f", ""} {
			fp := dedupe.AliasFP{FeedID: feed, FP: fmt.Sprint("u:", i)}
			as = append(as, dedupe.Alias{AliasFP: fp, Target: dedupe.Key{FeedID: "f", ExternalID: fmt.Sprint("e", i)}, Type: "story", Extra: "t"})
			fps = append(fps, fp)
		}
	}
	if _, err := s.CommitAliases(ctx, "f", []dedupe.Change{change("e0", "h", dedupe.ActionPublish)}, &dedupe.Validators{ETag: "e"}, as, nil, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if !a.Found || a.Target != as[i].Target {
			t.Errorf("alias %+v after CommitAliases = %+v; want found for %s", as[i].AliasFP, a, as[i].Target)
		}
	}
}
