package dedupe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Aliases are fingerprints kept beside items (a normalised link or GUID, a
// title and day), so that a story coming back under a new identity is known
// as the item it was (package publish, "reposts"). Both stores implement
// [AliasIndex].
//
// On Redis an alias of one feed is a string in the feed's partition,
// P{T}f:F:a:FP -> "F/E|type|extra", and an alias across feeds a string in
// the partition the fingerprint itself hashes to, P{T'}x:FP ->
// "F/E|type|extra|since ms", which the first item to claim it keeps
// (ReserveAliases, before that item is posted; since is when it did). Every command touches one key, so nothing
// is CROSSSLOT on a Cluster, and a look-up is one pipeline whatever the
// number of fingerprints (a ClusterClient splits it per node). Aliases
// expire by TTL: the store's retention unless the alias asks for less (text
// fingerprints live for the repost window). A look-up is a hint, never
// proof: the caller reads the target's record before acting on it.
//
// On bbolt they are in bucket "aliases" (scope NUL fingerprint -> value and
// expiry), with "aliasexp" the order a bounded purge on every put walks:
// entries keyed by the hour their aliases expire by, each listing the keys
// of up to 128 aliases written new (bolt_alias.go).

// AliasIndex keeps alias fingerprints.
type AliasIndex interface {
	// LookupAliases returns one Alias per fingerprint, in order; Found is
	// false for a fingerprint that has none (or whose alias expired).
	LookupAliases(ctx context.Context, fps []AliasFP, now time.Time) ([]Alias, error)
	// PutAliases records aliases, each for its TTL from now (the store's
	// retention when zero). A feed's alias is overwritten; an alias across
	// feeds (empty FeedID) keeps its first target and only has its TTL
	// renewed by a put for the same target.
	PutAliases(ctx context.Context, aliases []Alias, now time.Time) error
	// ReserveAliases claims aliases across feeds (every FeedID empty) for
	// their targets, each in one atomic step: an alias nobody holds is
	// set, with Since now; one its target holds is renewed, keeping its
	// Since; one another target holds is left alone. It returns the holder
	// of each alias after the call, in order, so that two feeds posting
	// one story at once learn which of them holds which fingerprint.
	ReserveAliases(ctx context.Context, aliases []Alias, now time.Time) ([]Alias, error)
}

// AliasCommitter is a store that records a fetch's aliases with its
// changes. On bbolt that saves a commit, and its fsync, per fetch with
// something new; on Redis, a round trip and a command per alias.
type AliasCommitter interface {
	// CommitAliases is [Store.Commit] followed by PutAliases(aliases,
	// now) and SetNote of each of notes (feedID's). The aliases and notes
	// are stored with Commit's last step, atomically, where the store
	// can: Redis puts those it cannot (aliases across feeds and notes, in
	// other slots) after it, never before, and when only those fail,
	// returns the outcomes with an error matching [ErrAliasesNotStored]
	// or [ErrNotesNotStored]. An invalid alias (see [CheckAliases]) or
	// note name fails the call before anything is written.
	CommitAliases(ctx context.Context, feedID string, changes []Change, v *Validators, aliases []Alias, notes []NoteWrite, now time.Time) ([]Outcome, error)
}

// ErrAliasesNotStored reports a CommitAliases whose changes were committed
// (its outcomes come with the error) but some of whose aliases were not
// stored: matching misses them until a later fetch puts them again.
var ErrAliasesNotStored = errors.New("committed, but some aliases were not stored")

// ErrNotesNotStored reports a CommitAliases whose changes were committed
// (its outcomes come with the error) but whose notes were not stored.
var ErrNotesNotStored = errors.New("committed, but its notes were not stored")

// CheckAliases returns the error PutAliases gives for aliases it refuses
// (ErrInvalid: a malformed fingerprint, target, type or data).
func CheckAliases(aliases []Alias) error {
	for _, a := range aliases {
		if err := checkAlias(a); err != nil {
			return err
		}
	}
	return nil
}

// AliasFP names one fingerprint.
type AliasFP struct {
	// FeedID scopes the fingerprint to one feed; empty makes it one across
	// every feed.
	FeedID string
	// FP is the fingerprint, short and free of "|", newlines and NUL (a
	// kind letter and a digest, as package publish makes them).
	FP string
}

// Alias is a fingerprint and the item it belongs to.
type Alias struct {
	AliasFP
	Target Key
	// Type is the target's content type (feeds of different types never
	// share a story).
	Type string
	// Extra is matcher data kept with the alias (the body's SimHash).
	Extra string
	// TTL is how long the alias lives (zero: the store's retention).
	TTL time.Duration
	// Since is when an alias across feeds was first held by its target
	// (set by the store on ReserveAliases, kept by renewals; zero for an
	// alias put without a reservation). Ties between two feeds that
	// reserve one story at once are decided by it.
	Since time.Time
	// Found is set by LookupAliases and ReserveAliases.
	Found bool
}

func checkAliasFP(f AliasFP) error {
	if f.FeedID != "" {
		if err := checkFeedID(f.FeedID); err != nil {
			return err
		}
	}
	if f.FP == "" || strings.ContainsAny(f.FP, "|\n\x00") {
		return fmt.Errorf("alias fingerprint %q: %w: must be non-empty without \"|\", newline or NUL", f.FP, ErrInvalid)
	}
	return nil
}

func checkAlias(a Alias) error {
	if err := checkAliasFP(a.AliasFP); err != nil {
		return err
	}
	if err := a.Target.check(); err != nil {
		return err
	}
	if err := checkToken("type", a.Type); err != nil {
		return err
	}
	return checkToken("alias data", a.Extra)
}

// aliasValue is the stored form: "feed/external id|type|extra", and for
// an alias across feeds that was reserved "|since ms".
func aliasValue(a Alias) string {
	// One concatenation, one allocation (Target.String() would be another).
	return a.Target.FeedID + "/" + a.Target.ExternalID + "|" + a.Type + "|" + a.Extra
}

// appendAliasValue appends aliasValue(a) to b without a string between.
func appendAliasValue(b []byte, a Alias) []byte {
	b = append(append(append(b, a.Target.FeedID...), '/'), a.Target.ExternalID...)
	return append(append(append(append(b, '|'), a.Type...), '|'), a.Extra...)
}

func parseAliasValue(f AliasFP, s string) (Alias, error) {
	parts := strings.SplitN(s, "|", 4)
	if len(parts) < 3 {
		return Alias{}, fmt.Errorf("alias %s: malformed value %q", f.FP, s)
	}
	k, err := ParseKey(parts[0])
	if err != nil {
		return Alias{}, fmt.Errorf("alias %s: %w", f.FP, err)
	}
	a := Alias{AliasFP: f, Target: k, Type: parts[1], Extra: parts[2], Found: true}
	if len(parts) == 4 {
		since, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil {
			return Alias{}, fmt.Errorf("alias %s: malformed time %q", f.FP, parts[3])
		}
		a.Since = fromMS(since)
	}
	return a, nil
}

func checkReserve(aliases []Alias) error {
	for _, a := range aliases {
		if err := checkAlias(a); err != nil {
			return err
		}
		if a.FeedID != "" {
			return fmt.Errorf("reserve alias %s of feed %q: %w: only aliases across feeds are reserved", a.FP, a.FeedID, ErrInvalid)
		}
	}
	return nil
}
