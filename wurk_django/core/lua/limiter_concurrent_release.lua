-- Give a concurrent limiter's slot back and book how long it was held.
-- KEYS: lmtr-cs:<name>, lmtr-stats:<name>. ARGV: slot id, held (ms), ttl (s).
-- Returns 1, or 0 when the lease had expired and another caller reclaimed the slot.
local removed = redis.call("ZREM", KEYS[1], ARGV[1])
local held = math.floor(tonumber(ARGV[2]))
local before = tonumber(redis.call("HGET", KEYS[2], "held_ms") or "0")
local after = redis.call("HINCRBY", KEYS[2], "held_ms", held)
redis.call("HINCRBY", KEYS[2], "held_time", math.floor(after / 1000) - math.floor(before / 1000))
redis.call("EXPIRE", KEYS[2], tonumber(ARGV[3]))
return removed
