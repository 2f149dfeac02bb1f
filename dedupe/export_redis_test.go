package dedupe

// MaxCommitAliases is how many aliases of its feed a Redis commit's script
// sets at most.
const MaxCommitAliases = maxCommitAliases

// AliasKey is the Redis key of an alias.
func (r *Redis) AliasKey(f AliasFP) string { return r.aliasKey(f) }
