package dedupe

import (
	"context"
	"fmt"
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
// the partition the fingerprint itself hashes to, P{T'}x:FP, which the
// first item to claim it keeps. Every command touches one key, so nothing
// is CROSSSLOT on a Cluster, and a look-up is one pipeline whatever the
// number of fingerprints (a ClusterClient splits it per node). Aliases
// expire by TTL: the store's retention unless the alias asks for less (text
// fingerprints live for the repost window). A look-up is a hint, never
// proof: the caller reads the target's record before acting on it.
//
// On bbolt they are in bucket "aliases" (scope NUL fingerprint -> value and
// expiry), with "aliasexp" (expiry ms + key) the order a bounded purge on
// every put walks.

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
	// Found is set by LookupAliases.
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

// aliasValue is the stored form: "feed/external id|type|extra".
func aliasValue(a Alias) string { return a.Target.String() + "|" + a.Type + "|" + a.Extra }

func parseAliasValue(f AliasFP, s string) (Alias, error) {
	parts := strings.SplitN(s, "|", 3)
	if len(parts) != 3 {
		return Alias{}, fmt.Errorf("alias %s: malformed value %q", f.FP, s)
	}
	k, err := ParseKey(parts[0])
	if err != nil {
		return Alias{}, fmt.Errorf("alias %s: %w", f.FP, err)
	}
	return Alias{AliasFP: f, Target: k, Type: parts[1], Extra: parts[2], Found: true}, nil
}
