package dedupe

import "github.com/redis/go-redis/v9"

// luaLib is prepended to every script: the record and meta codecs. Every
// number stays a decimal string from Go, because Lua 5.1 prints large
// numbers in exponent form ("1.7e+12").
const luaLib = `
local function split(s, n)
  local t, i = {}, 1
  while true do
    if n and #t == n - 1 then t[#t+1] = string.sub(s, i); return t end
    local j = string.find(s, "|", i, true)
    if not j then t[#t+1] = string.sub(s, i); return t end
    t[#t+1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end
local function dec(s)
  local t = split(s, 9)
  return {h=t[2] or "", ph=t[3] or "", c=t[4] or "", ty=t[5] or "", fs=t[6] or "", lp=t[7] or "", pd=t[8] or "", st=t[9] or ""}
end
local function enc(r)
  return table.concat({"1", r.h, r.ph, r.c, r.ty, r.fs, r.lp, r.pd, r.st}, "|")
end
local function mdec(s)
  local t = split(s, 5)
  return {a=t[1] or "0", enq=t[2] or "0", h=t[3] or "", st=t[4] or "0", why=t[5] or ""}
end
local function menc(m)
  return table.concat({m.a, m.enq, m.h, m.st, m.why}, "|")
end
local function member_parts(m)
  return string.match(m, "^([^/]*)/(.*)$")
end
local function fenced(valkey, fence)
  if fence ~= "0" then
    local cur = redis.call("HGET", valkey, "fence")
    if cur and cur ~= fence then
      return "FENCED feed lease taken over: stored token " .. cur .. ", caller's " .. fence
    end
  end
  return nil
end
`

// diffSrc: KEYS seen, rec, val, q:data. ARGV now, cutoff, sweep limit,
// store validators ("1"), etag, lm, feed, n, then n pairs (external id,
// hash), then the fencing token ("0": none). Returns {codes, known,
// stored, expired}, or the error FENCED.
const diffSrc = luaLib + `
local now, cutoff, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local feed, n = ARGV[7], tonumber(ARGV[8])
local why = fenced(KEYS[3], ARGV[9 + 2*n])
if why then return redis.error_reply(why) end
-- The val hash also keeps the lease's fencing token: only "at" says a 200
-- poll was accepted. Records and no "at" make a feed known too (a Commit
-- without validators), unless "fs" says its first sight was cut short
-- (steps.go).
local known = redis.call("HEXISTS", KEYS[3], "at") == 1 or
  (redis.call("ZCARD", KEYS[1]) > 0 and redis.call("HEXISTS", KEYS[3], "fs") == 0)
local codes, dirty = {}, false
for i = 0, n - 1, 500 do
  local last = math.min(i + 499, n - 1)
  local fields = {}
  for j = i, last do fields[#fields+1] = ARGV[9 + 2*j] end
  local recs = redis.call("HMGET", KEYS[2], unpack(fields))
  for k = 1, #recs do
    local s = recs[k]
    if not s then
      codes[#codes+1] = "n"; dirty = true
    else
      local r = dec(s)
      if r.h ~= ARGV[10 + 2*(i + k - 1)] then
        codes[#codes+1] = "c"; dirty = true
      elseif r.st == "s" then
        codes[#codes+1] = "s"
      else
        codes[#codes+1] = "u"
      end
    end
  end
  -- Refresh only items that already have a record; new ones get theirs
  -- from Commit, so a failed Commit leaves no half-known item behind.
  local z = {}
  for k = 1, #recs do
    if recs[k] then z[#z+1] = now; z[#z+1] = fields[k] end
  end
  if #z > 0 then redis.call("ZADD", KEYS[1], unpack(z)) end
end
local expired = 0
if limit > 0 then
  local old = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", "(" .. cutoff, "LIMIT", 0, limit)
  for _, ext in ipairs(old) do
    if redis.call("HEXISTS", KEYS[4], feed .. "/" .. ext) == 1 then
      redis.call("ZADD", KEYS[1], now, ext)
    else
      redis.call("ZREM", KEYS[1], ext)
      redis.call("HDEL", KEYS[2], ext)
      expired = expired + 1
    end
  end
end
local stored = 0
if not dirty and ARGV[4] == "1" then
  redis.call("HSET", KEYS[3], "etag", ARGV[5], "lm", ARGV[6], "at", now)
  redis.call("HDEL", KEYS[3], "fs")
  stored = 1
end
return {table.concat(codes), known and 1 or 0, stored, expired}
`

// commitSrc: KEYS seen, rec, val, q:due, q:dead, q:data, q:meta, q:run.
// ARGV now, feed, store validators ("1"), etag, lm, n, then n tuples
// (external id, hash, type, action, data, tail: the entry is data followed
// by tail), then the fencing token ("0":
// none), then "1" when this is the Commit's last step (steps.go), then
// optionally m, the feed's alias key name without a fingerprint, and m
// aliases of the feed (fingerprint, value, ttl ms),
// set as PutAliases sets them. Returns the outcome codes, or the error
// FENCED.
const commitSrc = luaLib + `
local now, feed, n = ARGV[1], ARGV[2], tonumber(ARGV[6])
local why = fenced(KEYS[3], ARGV[7 + 6*n])
if why then return redis.error_reply(why) end
local last = ARGV[8 + 6*n]
-- A step before the last on a feed never seen: mark the first sight as
-- under way before recording anything, so that Diff keeps reporting the
-- feed unknown until the last step clears the mark.
if last ~= "1" and redis.call("HEXISTS", KEYS[3], "at") == 0 and redis.call("ZCARD", KEYS[1]) == 0 then
  redis.call("HSET", KEYS[3], "fs", "1")
end
local function enqueue(member, hash, data, tail)
  if tail ~= "" then data = data .. tail end
  redis.call("HSET", KEYS[6], member, data)
  local due = redis.call("ZSCORE", KEYS[4], member)
  local ms = redis.call("HGET", KEYS[7], member)
  local m
  if due and ms then
    -- Already queued: the newer payload replaces the older one, and the
    -- entry keeps its backoff so a failing item is not hammered.
    m = mdec(ms); m.h = hash
  else
    m = {a="0", enq=now, h=hash, st="0", why=""}
    redis.call("ZADD", KEYS[4], now, member)
    redis.call("ZREM", KEYS[5], member)
    redis.call("HDEL", KEYS[8], member)
  end
  redis.call("HSET", KEYS[7], member, menc(m))
end
local out = {}
for i = 0, n - 1 do
  local b = 7 + 6*i
  local ext, hash, ty, act, data, tail = ARGV[b], ARGV[b+1], ARGV[b+2], ARGV[b+3], ARGV[b+4], ARGV[b+5]
  local member = feed .. "/" .. ext
  local s = redis.call("HGET", KEYS[2], ext)
  local o
  local r
  if not s then
    r = {h=hash, ph="", c="", ty=ty, fs=now, lp="", pd="", st=""}
    if act == "s" then
      r.st = "s"; o = "s"
    else
      enqueue(member, hash, data, tail); o = "n"
    end
  else
    r = dec(s); o = "u"
    if r.h ~= hash then
      r.h = hash
      if r.st == "" or r.st == "d" then
        r.st = ""
        if r.c == "" then r.ty = ty end
        enqueue(member, hash, data, tail); o = "c"
      end
    end
    if act == "b" and r.st == "s" then
      r.st = ""; r.ty = ty
      enqueue(member, hash, data, tail); o = "b"
    end
  end
  redis.call("HSET", KEYS[2], ext, enc(r))
  redis.call("ZADD", KEYS[1], now, ext)
  out[#out+1] = o
end
if ARGV[3] == "1" then
  redis.call("HSET", KEYS[3], "etag", ARGV[4], "lm", ARGV[5], "at", now)
end
if last == "1" then redis.call("HDEL", KEYS[3], "fs") end
-- The feed's aliases: their keys, in its slot, are the key name the
-- caller gives (Redis.aliasKey's) and the fingerprint.
local na = tonumber(ARGV[9 + 6*n] or "0")
if na > 0 then
  local base = ARGV[10 + 6*n]
  for i = 0, na - 1 do
    local b = 11 + 6*n + 3*i
    redis.call("SET", base .. ARGV[b], ARGV[b+1], "PX", ARGV[b+2])
  end
end
return table.concat(out)
`

// claimSrc: KEYS q:due, q:data, q:meta, q:run of one partition. ARGV now,
// max, ttl ms, owner, the partition's tag (prefix and hash tag: claim and
// record keys are built from it, in the same slot). Returns {{member, data, meta, record, run}...}, next
// unclaimed score.
const claimSrc = luaLib + `
local now, max, ttl, owner, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
-- ARGV[6..]: processes whose heartbeat is gone (see heartbeat.go): their
-- claims are taken as if free. A claim owner is "process#n".
local dead, ndead = {}, 0
for i = 6, #ARGV do dead[ARGV[i]] = true; ndead = ndead + 1 end
local function take(ck)
  if redis.call("SET", ck, owner, "NX", "PX", ttl) then return true end
  local cur = redis.call("GET", ck)
  -- The same owner string: a claim call whose answer was lost (a
  -- timeout), retried; it takes what it took again.
  if cur == owner then
    redis.call("PEXPIRE", ck, ttl)
    return true
  end
  if ndead == 0 then return false end
  if cur and dead[string.match(cur, "^(.*)#[^#]*$") or cur] then
    redis.call("SET", ck, owner, "PX", ttl)
    return true
  end
  return false
end
local out = {}
local offset, scanned = 0, 0
while #out < max and scanned < 1000 do
  local batch = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", now, "LIMIT", offset, 100)
  if #batch == 0 then break end
  for _, member in ipairs(batch) do
    scanned = scanned + 1
    if #out < max then
      local ck = prefix .. "claim:" .. member
      if take(ck) then
        local data = redis.call("HGET", KEYS[2], member)
        local ms = redis.call("HGET", KEYS[3], member)
        local feed, ext = member_parts(member)
        if not data or not ms or not feed then
          -- An entry without its payload cannot be delivered; drop it
          -- rather than spin on it.
          redis.call("ZREM", KEYS[1], member)
          redis.call("DEL", ck)
        else
          local rk = prefix .. "f:" .. feed .. ":rec"
          local s = redis.call("HGET", rk, ext)
          if s then
            local r = dec(s)
            -- A mark already set stays, with the hash of the earliest
            -- POST that may have landed.
            if r.c == "" and r.pd == "" then
              r.pd = mdec(ms).h
              redis.call("HSET", rk, ext, enc(r))
            end
          end
          out[#out+1] = {member, data, ms, s or "", redis.call("HGET", KEYS[4], member) or ""}
        end
      end
    end
  end
  offset = offset + #batch
end
if #out > 0 then return {out, ""} end
local first = redis.call("ZRANGE", KEYS[1], 0, 99, "WITHSCORES")
for i = 1, #first, 2 do
  if redis.call("EXISTS", prefix .. "claim:" .. first[i]) == 0 then
    return {out, first[i+1]}
  end
end
return {out, ""}
`

// settleSrc: KEYS q:due, q:dead, q:data, q:meta, q:run of the item's
// partition. ARGV the partition's tag,
// member, owner, kind, now, content id, type, hash, next, status, reason,
// ambiguous, forget, claim ttl ms, run. Returns {held, record}: held is 1
// if owner held the claim; record is the item's record, for kind "renew"
// only (compare-and-pexpire of the claim before a send).
const settleSrc = luaLib + `
local prefix, member, owner, kind, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local feed, ext = member_parts(member)
local rk = prefix .. "f:" .. feed .. ":rec"
local ck = prefix .. "claim:" .. member
local held = redis.call("GET", ck) == owner
local s = redis.call("HGET", rk, ext)
if kind == "renew" then
  if held then redis.call("PEXPIRE", ck, ARGV[14]) end
  return {held and 1 or 0, s or ""}
end
if not held then
  -- The claim lapsed: whoever holds it now owns the item's state. Only a
  -- content id the API really gave is kept, on a record without one, so
  -- that a later send updates it rather than posting again.
  if kind == "delivered" then
    local r
    if s then r = dec(s) else r = {h=ARGV[8], ph="", c="", ty=ARGV[7], fs=now, lp="", pd="", st=""} end
    if r.c == "" then
      r.c = ARGV[6]; r.ty = ARGV[7]; r.ph = ARGV[8]; r.lp = now
      redis.call("HSET", rk, ext, enc(r))
    end
  end
  return {0, ""}
end
local r
if s then r = dec(s) else r = {h=ARGV[8], ph="", c="", ty=ARGV[7], fs=now, lp="", pd="", st=""} end
local ms = redis.call("HGET", KEYS[4], member)
local m
if ms then m = mdec(ms) end
local function drop()
  redis.call("ZREM", KEYS[1], member)
  redis.call("ZREM", KEYS[2], member)
  redis.call("HDEL", KEYS[3], member)
  redis.call("HDEL", KEYS[4], member)
  redis.call("HDEL", KEYS[5], member)
end
local function failed()
  m.a = string.format("%d", tonumber(m.a) + 1)
  m.st = ARGV[10]; m.why = ARGV[11]
  local run = ARGV[15]
  if run == "" then
    redis.call("HDEL", KEYS[5], member)
  else
    local n = 1
    local cur = redis.call("HGET", KEYS[5], member)
    if cur then
      local t = split(cur, 2)
      if t[1] == run then n = (tonumber(t[2]) or 0) + 1 end
    end
    redis.call("HSET", KEYS[5], member, run .. "|" .. string.format("%d", n))
  end
end
local write = s ~= false and s ~= nil
if kind == "delivered" then
  r.c = ARGV[6]; r.ty = ARGV[7]; r.ph = ARGV[8]; r.lp = now; r.pd = ""; r.st = ""
  write = true
  redis.call("HDEL", KEYS[5], member)
  if m then
    if m.h == ARGV[8] then
      drop()
    else
      -- A newer hash was accepted while this one was in flight: deliver
      -- it next, as an update, without waiting.
      m.a = "0"; m.st = "0"; m.why = ""
      redis.call("HSET", KEYS[4], member, menc(m))
      redis.call("ZADD", KEYS[1], now, member)
    end
  end
elseif kind == "retry" then
  if ARGV[12] ~= "1" then r.pd = "" end
  if ARGV[13] == "1" then r.c = ""; r.ph = "" end
  if m then
    failed()
    redis.call("HSET", KEYS[4], member, menc(m))
    redis.call("ZADD", KEYS[1], ARGV[9], member)
  end
elseif kind == "dead" then
  if ARGV[12] ~= "1" then r.pd = "" end
  r.st = "d"
  if m then
    failed()
    redis.call("HSET", KEYS[4], member, menc(m))
    redis.call("ZREM", KEYS[1], member)
    redis.call("ZADD", KEYS[2], now, member)
  end
elseif kind == "removed" then
  r.pd = ""; r.st = "r"
  drop()
elseif kind == "aliased" then
  r.pd = ""; r.st = "s"
  drop()
elseif kind == "release" then
  if ARGV[12] ~= "1" then r.pd = "" end
  if m and ARGV[9] ~= "0" and redis.call("ZSCORE", KEYS[1], member) then
    redis.call("ZADD", KEYS[1], ARGV[9], member)
  end
end
if write then redis.call("HSET", rk, ext, enc(r)) end
redis.call("DEL", ck)
return {1, ""}
`

// retryDeadSrc: KEYS q:due, q:dead, q:meta, q:run of one partition. ARGV
// the partition's tag, now,
// member ("" for all). Returns how many were queued again.
const retryDeadSrc = luaLib + `
local prefix, now, one = ARGV[1], ARGV[2], ARGV[3]
local members
if one == "" then
  members = redis.call("ZRANGE", KEYS[2], 0, -1)
elseif redis.call("ZSCORE", KEYS[2], one) then
  members = {one}
else
  return 0
end
for _, member in ipairs(members) do
  redis.call("ZREM", KEYS[2], member)
  redis.call("ZADD", KEYS[1], now, member)
  redis.call("HDEL", KEYS[4], member)
  local ms = redis.call("HGET", KEYS[3], member)
  if ms then
    local m = mdec(ms)
    m.a = "0"
    redis.call("HSET", KEYS[3], member, menc(m))
  end
  local feed, ext = member_parts(member)
  local rk = prefix .. "f:" .. feed .. ":rec"
  local s = redis.call("HGET", rk, ext)
  if s then
    local r = dec(s)
    if r.st == "d" then r.st = "" end
    redis.call("HSET", rk, ext, enc(r))
  end
end
return #members
`

// Lease scripts: KEYS lease key; ARGV owner, ttl ms.
const (
	acquireLeaseSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
return 0
`
	renewLeaseSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
`
	releaseLeaseSrc = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
`
)

// Many-lease scripts: KEYS lease keys; ARGV owner, ttl ms. They apply the
// one-lease scripts above to each key and answer one 0 or 1 per key.
const (
	acquireLeasesSrc = `
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call("GET", k) == ARGV[1] then
    redis.call("PEXPIRE", k, ARGV[2])
    out[i] = 1
  elseif redis.call("SET", k, ARGV[1], "NX", "PX", ARGV[2]) then
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`
	renewLeasesSrc = `
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call("GET", k) == ARGV[1] then
    redis.call("PEXPIRE", k, ARGV[2])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`
	releaseLeasesSrc = `
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call("GET", k) == ARGV[1] then
    out[i] = redis.call("DEL", k)
  else
    out[i] = 0
  end
end
return out
`
)

// scripts are the store's Lua scripts; go-redis runs them by digest and
// loads them on NOSCRIPT (after a Redis restart, for instance).
type scripts struct {
	diff, commit, claim, settle, retryDead    *redis.Script
	acquireLease, renewLease, releaseLease    *redis.Script
	acquireLeases, renewLeases, releaseLeases *redis.Script
	epoch, recordFound, putFirst, reserve     *redis.Script
}

func newScripts() scripts {
	return scripts{
		diff:          redis.NewScript(diffSrc),
		commit:        redis.NewScript(commitSrc),
		claim:         redis.NewScript(claimSrc),
		settle:        redis.NewScript(settleSrc),
		retryDead:     redis.NewScript(retryDeadSrc),
		acquireLease:  redis.NewScript(acquireLeaseSrc),
		renewLease:    redis.NewScript(renewLeaseSrc),
		releaseLease:  redis.NewScript(releaseLeaseSrc),
		acquireLeases: redis.NewScript(acquireLeasesSrc),
		renewLeases:   redis.NewScript(renewLeasesSrc),
		releaseLeases: redis.NewScript(releaseLeasesSrc),
		epoch:         redis.NewScript(epochSrc),
		recordFound:   redis.NewScript(recordFoundSrc),
		putFirst:      redis.NewScript(putFirstSrc),
		reserve:       redis.NewScript(reserveSrc),
	}
}
