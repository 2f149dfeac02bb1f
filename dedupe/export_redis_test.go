package dedupe

import "time"

// MaxCommitAliases is how many aliases of its feed a Redis commit's script
// sets at most.
const MaxCommitAliases = maxCommitAliases

// AliasKey is the Redis key of an alias.
func (r *Redis) AliasKey(f AliasFP) string { return r.aliasKey(f) }

// SetLater sets how long r holds outcomes handed over for company, and a
// hook its leader calls before it takes the window's calls.
func (r *Redis) SetLater(linger time.Duration, hold func()) { r.linger, r.later.hold = linger, hold }

// LaterWaiting is how many ClaimOpsLater calls wait in the open window.
func (r *Redis) LaterWaiting() int {
	r.later.mu.Lock()
	defer r.later.mu.Unlock()
	if r.later.cur == nil {
		return 0
	}
	return len(r.later.cur.calls)
}
