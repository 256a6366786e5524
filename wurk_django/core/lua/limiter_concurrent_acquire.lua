-- Take a slot of a concurrent limiter, or refuse.
-- KEYS: lmtr-cs:<name> (slot id -> lease expiry), lmtr-stats:<name>.
-- ARGV: size, lock_timeout (s), slot id, ttl (s), waited (ms) before this attempt.
-- Returns {1, now} when the slot is taken, {0, now, earliest lease expiry} when full.
--@include limiter_admission
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
-- Leases of holders that died (or overran lock_timeout) go back to the pool.
local reclaimed = redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. stamp)
if reclaimed > 0 then
  redis.call("HINCRBY", KEYS[2], "reclaimed", reclaimed)
end
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[1]) then
  local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  return {0, stamp, first[2]}
end
local ttl = tonumber(ARGV[4])
local lease = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now + lease, ARGV[3])
-- No lease outlives the newest by more than lock_timeout: neither need the key.
redis.call("EXPIRE", KEYS[1], math.ceil(lease) + 1)
redis.call("HINCRBY", KEYS[2], "held", 1)
count_admission(KEYS[2], tonumber(ARGV[5]), ttl)
return {1, stamp}
