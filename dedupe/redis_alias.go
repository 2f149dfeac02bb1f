package dedupe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	_ AliasIndex     = (*Redis)(nil)
	_ AliasCommitter = (*Redis)(nil)
)

// maxCommitAliases bounds the aliases a commit's script sets; a fetch
// with more has them put apart, after it, as a huge fetch's commit is
// cut into steps (steps.go).
const maxCommitAliases = 4 * stepItems

// aliasTTL is how long a is kept: its TTL, or the store's retention; at
// least a millisecond (PX 0 is an error).
func (r *Redis) aliasTTL(a Alias) time.Duration {
	if a.TTL <= 0 {
		return r.retention
	}
	return max(a.TTL, time.Millisecond)
}

// CommitAliases implements [AliasCommitter]. The feed's own aliases (in
// its slot) are set by the commit's last step, in its script: a SET
// command each in a pipeline of their own after the commit was most of
// what a first sight's aliases cost the worker. Aliases across feeds live
// in the slots their fingerprints hash to, so they are put after the
// commit as PutAliases puts them, and so are the feed's when there are
// more than one script should set; a failure to put those returns the
// commit's outcomes with an error matching [ErrAliasesNotStored]. The
// notes' keys are in no feed's slot either: they are set in the same
// pipeline, after the commit, so that a commit that fails leaves them as
// they were.
func (r *Redis) CommitAliases(ctx context.Context, feedID string, changes []Change, v *Validators, aliases []Alias, notes []NoteWrite, now time.Time) ([]Outcome, error) {
	if err := CheckAliases(aliases); err != nil {
		return nil, err
	}
	if err := checkNoteWrites(feedID, notes); err != nil {
		return nil, err
	}
	// The feed's own aliases are picked out of aliases by the commit, not
	// copied: an Alias is large, and copying a fetch's own aliases (grown
	// by doubling, at first) was most of what its commit allocated.
	n := ownAliases(aliases, feedID)
	own, apart := aliases, []Alias(nil)
	switch {
	case n > maxCommitAliases:
		own, apart = nil, aliases
	case n < len(aliases):
		apart = make([]Alias, 0, len(aliases)-n)
		for _, a := range aliases {
			if a.FeedID != feedID {
				apart = append(apart, a)
			}
		}
	}
	out, err := r.commit(ctx, feedID, changes, v, own, now)
	if err != nil {
		return nil, err
	}
	aliasErr, noteErr := r.putApart(ctx, apart, feedID, notes)
	if aliasErr != nil {
		aliasErr = fmt.Errorf("redis commit feed %q: %w: %w", feedID, ErrAliasesNotStored, aliasErr)
	}
	if noteErr != nil {
		noteErr = fmt.Errorf("redis commit feed %q: %w: %w", feedID, ErrNotesNotStored, noteErr)
	}
	if err := errors.Join(aliasErr, noteErr); err != nil {
		return out, err
	}
	return out, nil
}

// aliasKey is where one alias lives: a feed's in the feed's partition, one
// across feeds in the partition its fingerprint hashes to.
func (r *Redis) aliasKey(f AliasFP) string {
	if f.FeedID != "" {
		return r.l.feedKey(f.FeedID, "a:"+f.FP)
	}
	return r.l.tag(r.l.partitionOf(f.FP)) + "x:" + f.FP
}

// putFirstSrc sets an alias across feeds unless another target holds it;
// the holder's put renews it, keeping the time it was reserved. One key:
// Cluster-legal anywhere.
const putFirstSrc = `
local v = redis.call('GET', KEYS[1])
local val = ARGV[1]
if v then
  if string.match(v, '^[^|]*') ~= ARGV[3] then return 0 end
  local since = string.match(v, '^[^|]*|[^|]*|[^|]*|(%d+)$')
  if since then val = val .. '|' .. since end
end
redis.call('SET', KEYS[1], val, 'PX', ARGV[2])
return 1`

// reserveSrc is putFirstSrc that also stamps a new holder's time
// (ARGV[4]) and answers the value held after the call.
const reserveSrc = `
local v = redis.call('GET', KEYS[1])
local val = ARGV[1] .. '|' .. ARGV[4]
if v then
  if string.match(v, '^[^|]*') ~= ARGV[3] then return v end
  local since = string.match(v, '^[^|]*|[^|]*|[^|]*|(%d+)$')
  if since then val = ARGV[1] .. '|' .. since end
end
redis.call('SET', KEYS[1], val, 'PX', ARGV[2])
return val`

// LookupAliases implements [AliasIndex] in one pipeline of GETs.
func (r *Redis) LookupAliases(ctx context.Context, fps []AliasFP, _ time.Time) ([]Alias, error) {
	out := make([]Alias, len(fps))
	if len(fps) == 0 {
		return out, nil
	}
	for _, f := range fps {
		if err := checkAliasFP(f); err != nil {
			return nil, err
		}
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(fps))
	for i, f := range fps {
		cmds[i] = pipe.Get(ctx, r.aliasKey(f))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis look up aliases: %w", err)
	}
	for i, c := range cmds {
		out[i].AliasFP = fps[i]
		s, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("redis look up alias %s: %w", fps[i].FP, err)
		}
		if out[i], err = parseAliasValue(fps[i], s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PutAliases implements [AliasIndex] in one pipeline. The scripts run by
// digest (EVALSHA): sending each one's source, as EVAL does, was most of
// the bytes a first pass wrote to Redis for its aliases.
func (r *Redis) PutAliases(ctx context.Context, aliases []Alias, _ time.Time) error {
	for _, a := range aliases {
		if err := checkAlias(a); err != nil {
			return err
		}
	}
	err, _ := r.putApart(ctx, aliases, "", nil)
	return err
}

// putApart puts aliases (checked) and sets feedID's notes (checked) in one
// pipeline (and runs again, in another, the scripts a restarted Redis had
// lost), and tells which of the two failed. Each command's own error
// tells: on a Cluster the pipeline is split by node, and one node's
// failure is not the others'.
func (r *Redis) putApart(ctx context.Context, aliases []Alias, feedID string, notes []NoteWrite) (aliasErr, noteErr error) {
	if len(aliases) == 0 && len(notes) == 0 {
		return nil, nil
	}
	pipe := r.c.Pipeline()
	var calls []scriptCall
	var across []*redis.Cmd
	aliasCmds := make([]redis.Cmder, 0, len(aliases))
	for _, a := range aliases {
		ttl := r.aliasTTL(a)
		key := r.aliasKey(a.AliasFP)
		if a.FeedID != "" {
			aliasCmds = append(aliasCmds, pipe.Set(ctx, key, aliasValue(a), ttl))
			continue
		}
		c := scriptCall{keys: []string{key}, args: []any{aliasValue(a), strconv.FormatInt(ttl.Milliseconds(), 10), a.Target.String()}}
		calls = append(calls, c)
		cmd := r.s.putFirst.EvalSha(ctx, pipe, c.keys, c.args...)
		across = append(across, cmd)
		aliasCmds = append(aliasCmds, cmd)
	}
	noteCmds := make([]redis.Cmder, len(notes))
	for i, n := range notes {
		if n.Data == nil {
			noteCmds[i] = pipe.Del(ctx, r.noteKey(feedID, n.Name))
		} else {
			noteCmds[i] = pipe.Set(ctx, r.noteKey(feedID, n.Name), n.Data, 0)
		}
	}
	_, execErr := pipe.Exec(ctx)
	for i, c := range noteCmds {
		if err := c.Err(); err != nil {
			noteErr = fmt.Errorf("write note %s of feed %s: %w", notes[i].Name, feedID, err)
			break
		}
	}
	for _, c := range aliasCmds {
		if err := c.Err(); err != nil && !isNoScript(err) {
			aliasErr = fmt.Errorf("redis put aliases: %w", err)
			break
		}
	}
	if execErr != nil && aliasErr == nil && noteErr == nil && !slices.ContainsFunc(across, func(c *redis.Cmd) bool { return isNoScript(c.Err()) }) {
		// No command says how it went (a hook refused the pipeline):
		// none of them is known to have run.
		if len(aliases) > 0 {
			aliasErr = fmt.Errorf("redis put aliases: %w", execErr)
		}
		if len(notes) > 0 {
			noteErr = fmt.Errorf("write notes of feed %s: %w", feedID, execErr)
		}
	}
	if aliasErr != nil {
		return aliasErr, noteErr
	}
	// A restarted Redis has lost the script: those calls did not run.
	var missing []scriptCall
	for i, c := range across {
		if isNoScript(c.Err()) {
			missing = append(missing, calls[i])
		}
	}
	if len(missing) == 0 {
		return nil, noteErr
	}
	again, err := r.runPipelined(ctx, r.s.putFirst, missing)
	if err != nil {
		return fmt.Errorf("redis put aliases: %w", err), noteErr
	}
	for _, c := range again {
		if err := c.Err(); err != nil {
			return fmt.Errorf("redis put aliases: %w", err), noteErr
		}
	}
	return nil, noteErr
}

// ReserveAliases implements [AliasIndex]: one script per fingerprint, each
// on one key (Cluster-legal), in one pipeline, by digest.
func (r *Redis) ReserveAliases(ctx context.Context, aliases []Alias, now time.Time) ([]Alias, error) {
	if err := checkReserve(aliases); err != nil {
		return nil, err
	}
	out := make([]Alias, len(aliases))
	if len(aliases) == 0 {
		return out, nil
	}
	nowMS := strconv.FormatInt(ms(now), 10)
	calls := make([]scriptCall, len(aliases))
	// Every call's key and arguments in two arrays, not two each.
	keys := make([]string, len(aliases))
	args := make([]any, 4*len(aliases))
	vals := make([]string, len(aliases))
	// The TTL's argument is made once per TTL (most aliases share the
	// retention), the target's is cut out of the value ("feed/id|..."):
	// each was a string per alias.
	var ttlMS time.Duration
	var ttlArg any
	for i, a := range aliases {
		if ttl := r.aliasTTL(a); ttlArg == nil || ttl != ttlMS {
			ttlMS, ttlArg = ttl, strconv.FormatInt(ttl.Milliseconds(), 10)
		}
		keys[i] = r.aliasKey(a.AliasFP)
		vals[i] = aliasValue(a)
		arg := args[4*i : 4*i+4 : 4*i+4]
		arg[0], arg[1], arg[2], arg[3] = vals[i], ttlArg, vals[i][:len(a.Target.FeedID)+1+len(a.Target.ExternalID)], nowMS
		calls[i] = scriptCall{keys: keys[i : i+1 : i+1], args: arg}
	}
	cmds, err := r.runPipelined(ctx, r.s.reserve, calls)
	if err != nil {
		return nil, fmt.Errorf("redis reserve aliases: %w", err)
	}
	for i, c := range cmds {
		s, err := c.Text()
		if err != nil {
			return nil, fmt.Errorf("redis reserve alias %s: %w", aliases[i].FP, err)
		}
		if out[i], err = parseReserved(aliases[i], vals[i], s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseReserved is parseAliasValue(a.AliasFP, s) for the answer s to a's
// reservation, whose value is val: an answer that is val and a time (a
// held by its own target, as it mostly is) is a with that time, without
// parsing val again.
func parseReserved(a Alias, val, s string) (Alias, error) {
	// An external id with a "|" makes val one parseAliasValue reads
	// otherwise: that one takes the long way.
	if len(s) > len(val)+1 && s[:len(val)] == val && s[len(val)] == '|' && strings.Count(val, "|") == 2 {
		if n, err := strconv.ParseInt(s[len(val)+1:], 10, 64); err == nil {
			a.Since, a.Found = fromMS(n), true
			a.TTL = 0
			return a, nil
		}
	}
	return parseAliasValue(a.AliasFP, s)
}
