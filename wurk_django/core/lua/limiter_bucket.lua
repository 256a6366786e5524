-- Count a call against a bucket limiter: `count` calls per interval, the bucket starting
-- afresh at every multiple of the interval (Redis's clock).
-- KEYS: lmtr-b:<name>:<epoch>, lmtr-stats:<name>.
-- ARGV: count, used, interval (s), epoch, waited (ms), stats ttl (s).
-- The caller names the bucket from its own clock corrected by Redis's; when that names
-- another bucket than Redis's clock does (a skewed host, a call on the boundary) nothing
-- is counted and {-1, now} tells it the time to name the right one with.
-- Returns {1, now}, or {0, now, seconds until the next bucket}.
--@include limiter_admission
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local interval = tonumber(ARGV[3])
local epoch = math.floor(tonumber(t[1]) / interval)
if epoch ~= tonumber(ARGV[4]) then
  return {-1, stamp}
end
local used = tonumber(ARGV[2])
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
if current + used > tonumber(ARGV[1]) then
  return {0, stamp, tostring((epoch + 1) * interval - now)}
end
redis.call("INCRBY", KEYS[1], used)
redis.call("EXPIRE", KEYS[1], 2 * interval)
count_admission(KEYS[2], tonumber(ARGV[5]), tonumber(ARGV[6]))
return {1, stamp}
