package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisStats is what Redis itself says about one cycle (Options.RedisStats):
// the commands it executed and the memory the bench's keys take. It reads
// server-wide counters, so it is exact only on a Redis of the bench's own:
// another client's commands would count as the worker's.
type RedisStats struct {
	// Commands is the INFO commandstats calls added during the cycle, every
	// command counted: those a script runs inside Redis as well as those
	// the worker sent (the worker's round trips are Cycle.RedisRoundTrips).
	// The bench's own INFO calls are left out.
	Commands int64 `json:"commands"`
	// Scripts counts the EVALSHA/EVAL calls among them.
	Scripts int64 `json:"scripts"`
	// ServerCPU is the CPU time (user and system, seconds) the Redis
	// server used during the cycle (INFO cpu): the store's work that the
	// worker's own CPU does not show, which the embedded store does in
	// the worker.
	ServerCPU float64 `json:"server_cpu_s"`
	// Usec is the commandstats usec added: an upper bound on the time
	// Redis spent executing the cycle's commands (a script's usec includes
	// the commands it runs, which count their own usec too).
	Usec int64 `json:"usec"`
	// ByCommand is Commands per command name.
	ByCommand map[string]int64 `json:"by_command"`
	// CommandsPerPoll divides Commands by the polls; CommandsPerItem by the
	// items created or updated (zero when none).
	CommandsPerPoll float64 `json:"commands_per_poll"`
	CommandsPerItem float64 `json:"commands_per_item"`
	// UsedMemory is INFO memory's used_memory at the end of the cycle minus
	// its value before cycle 1 (bytes): what this run's keys and Redis's
	// bookkeeping of them grew by.
	UsedMemory int64 `json:"used_memory_delta_bytes"`
	// Keys are the keys under the run's prefix at the end of the cycle,
	// grouped by kind (the feed id, partition tag and fingerprint replaced
	// by "*"), with MEMORY USAGE ... SAMPLES 0 summed per kind.
	Keys     []KeyKind `json:"keys"`
	KeyBytes int64     `json:"key_bytes"`
}

// KeyKind is one kind of key: how many and their MEMORY USAGE in bytes.
type KeyKind struct {
	Kind  string `json:"kind"`
	Keys  int64  `json:"keys"`
	Bytes int64  `json:"bytes"`
}

// redisCounters is one reading of INFO commandstats, used_memory and the
// server's CPU seconds.
type redisCounters struct {
	calls, usec map[string]int64
	usedMemory  int64
	cpu         float64
}

// readCounters reads INFO commandstats, memory and cpu in one call.
func readCounters(ctx context.Context, rc *redis.Client) (redisCounters, error) {
	info, err := rc.Info(ctx, "commandstats", "memory", "cpu").Result()
	if err != nil {
		return redisCounters{}, fmt.Errorf("redis stats: INFO: %w", err)
	}
	c := redisCounters{calls: map[string]int64{}, usec: map[string]int64{}}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			if c.usedMemory, err = strconv.ParseInt(v, 10, 64); err != nil {
				return redisCounters{}, fmt.Errorf("redis stats: %q: %w", line, err)
			}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return redisCounters{}, fmt.Errorf("redis stats: %q: %w", line, err)
			}
			c.cpu += f
			continue
		}
		// cmdstat_evalsha:calls=12,usec=...
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			if k != "calls" && k != "usec" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return redisCounters{}, fmt.Errorf("redis stats: %q: %w", line, err)
			}
			if k == "calls" {
				c.calls[name] = n
			} else {
				c.usec[name] = n
			}
		}
	}
	return c, nil
}

// redisStats measures a cycle from the counters read before it (before)
// and before cycle 1 (base), and the keys under prefix now.
func redisStats(ctx context.Context, rc *redis.Client, prefix string, base, before redisCounters) (*RedisStats, error) {
	after, err := readCounters(ctx, rc)
	if err != nil {
		return nil, err
	}
	s := &RedisStats{ByCommand: map[string]int64{}, UsedMemory: after.usedMemory - base.usedMemory, ServerCPU: after.cpu - before.cpu}
	for name, n := range after.calls {
		if name == "info" {
			continue // the bench's own readings
		}
		if d := n - before.calls[name]; d > 0 {
			s.ByCommand[name] = d
			s.Commands += d
			if isScript(name) {
				s.Scripts += d
			}
		}
	}
	s.Usec = scriptedUsec(before, after)
	if s.Keys, err = keyKinds(ctx, rc, prefix); err != nil {
		return nil, err
	}
	for _, k := range s.Keys {
		s.KeyBytes += k.Bytes
	}
	return s, nil
}

// isScript reports whether a command runs a script.
func isScript(name string) bool {
	return name == "evalsha" || name == "eval" || name == "evalsha_ro" || name == "eval_ro"
}

// scriptedUsec sums the commandstats usec added between two readings,
// the bench's own INFO calls left out (see RedisStats.Usec).
func scriptedUsec(before, after redisCounters) int64 {
	var all int64
	for name, n := range after.usec {
		if name == "info" {
			continue
		}
		all += n - before.usec[name]
	}
	return all
}

// keyKinds scans the keys under prefix and sums MEMORY USAGE per kind,
// a pipeline per batch of scanned keys.
func keyKinds(ctx context.Context, rc *redis.Client, prefix string) ([]KeyKind, error) {
	kinds := map[string]*KeyKind{}
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		pipe := rc.Pipeline()
		cmds := make([]*redis.IntCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.MemoryUsage(ctx, k, 0)
		}
		// A key that expired between SCAN and MEMORY USAGE answers nil:
		// it takes no memory any more, so it is skipped.
		_, _ = pipe.Exec(ctx)
		for i, k := range batch {
			n, err := cmds[i].Result()
			if err != nil {
				if err == redis.Nil {
					continue
				}
				return fmt.Errorf("redis stats: MEMORY USAGE %s: %w", k, err)
			}
			kind := keyKind(strings.TrimPrefix(k, prefix))
			kk := kinds[kind]
			if kk == nil {
				kk = &KeyKind{Kind: kind}
				kinds[kind] = kk
			}
			kk.Keys++
			kk.Bytes += n
		}
		batch = batch[:0]
		return nil
	}
	iter := rc.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis stats: SCAN: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	out := make([]KeyKind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b KeyKind) int { return strings.Compare(a.Kind, b.Kind) })
	return out, nil
}

// keyKind names a key (prefix removed) by its shape, as the dedupe
// package's layout builds them: the partition's hash tag becomes "{p}",
// a feed id, lease or note name, process or fingerprint "*":
// "{p:3}f:farm-7:seen" → "{p}f:*:seen", "{p:3}f:farm-7:a:ab12" →
// "{p}f:*:a:*", "{p:3}q:due" → "{p}q:due", "hb:host-1" → "hb:*".
func keyKind(k string) string {
	tag := ""
	if strings.HasPrefix(k, "{") {
		if i := strings.Index(k, "}"); i > 0 {
			tag, k = "{p}", k[i+1:]
		}
	}
	head, rest, ok := strings.Cut(k, ":")
	if !ok {
		return tag + k
	}
	switch head {
	case "f":
		// f:<feed>:<suffix>; the feed id may hold ':', the suffix is the
		// last part, or "a:<fingerprint>" for a feed's alias.
		if i := strings.LastIndex(rest, ":a:"); i >= 0 {
			return tag + "f:*:a:*"
		}
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			return tag + "f:*:" + rest[i+1:]
		}
		return tag + "f:*"
	case "q":
		return tag + k
	case "hist":
		// hist:{f:<feed>}:items|order|polls, hist:{h}:<hour>.
		if strings.HasPrefix(rest, "{h}") {
			return "hist:{h}:*"
		}
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			return "hist:*:" + rest[i+1:]
		}
	case "note":
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			return tag + "note:*:" + rest[i+1:]
		}
	}
	return tag + head + ":*"
}

// writeRedisStats prints, per cycle with RedisStats, the commands and the
// keys by kind.
func writeRedisStats(w io.Writer, cycles []Cycle) {
	for _, c := range cycles {
		r := c.Redis
		if r == nil {
			continue
		}
		fmt.Fprintf(w, "\nRedis, cycle %s: %d commands (%d scripts), %.2f per poll, %.2f per item; at most %d µs executing; server CPU %.2f s; used_memory +%d B; keys %d B:\n",
			cycleNames[c.Cycle], r.Commands, r.Scripts, r.CommandsPerPoll, r.CommandsPerItem, r.Usec, r.ServerCPU, r.UsedMemory, r.KeyBytes)
		names := make([]string, 0, len(r.ByCommand))
		for n := range r.ByCommand {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %s %d", n, r.ByCommand[n])
		}
		fmt.Fprintln(w)
		for _, k := range r.Keys {
			fmt.Fprintf(w, "  %-20s %8d keys %12d B  %8.1f B/key\n", k.Kind, k.Keys, k.Bytes, float64(k.Bytes)/float64(max(k.Keys, 1)))
		}
	}
}
