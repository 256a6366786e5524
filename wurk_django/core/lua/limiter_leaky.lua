-- Count a call against a leaky-bucket limiter: the bucket holds `size` calls and drains
-- at `drain_per_s`, so bursts up to `size` pass and the steady rate is the drain rate.
-- KEYS: lmtr-l:<name> (hash: level, last), lmtr-stats:<name>.
-- ARGV: size, drain_per_s, waited (ms), stats ttl (s).
-- Returns {1, now}, or {0, now, seconds until one call fits}.
--@include limiter_admission
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local size = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local state = redis.call("HMGET", KEYS[1], "level", "last")
local level = tonumber(state[1] or "0") or 0
local last = tonumber(state[2] or "") or now
local elapsed = now - last
if elapsed < 0 then
  elapsed = 0  -- a stored time ahead of this clock (a failover): leak nothing
end
level = level - elapsed * rate
if level < 0 then
  level = 0
end
local admitted = level + 1 <= size
if admitted then
  level = level + 1
end
redis.call("HSET", KEYS[1], "level", tostring(level), "last", stamp)
-- An untouched bucket is empty after size / rate seconds: the key needs no longer life.
redis.call("EXPIRE", KEYS[1], math.ceil(size / rate) + 1)
if not admitted then
  return {0, stamp, tostring((level + 1 - size) / rate)}
end
count_admission(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return {1, stamp}
