-- Spend points of a points limiter: `capacity` points, refilled at `refill_per_s`.
-- KEYS: lmtr-p:<name> (hash: points, last), lmtr-stats:<name>.
-- ARGV: capacity, refill_per_s, estimate, stats ttl (s).
-- A missing hash is a full one. Returns {1, now}, or {0, now, seconds until it fits}.
--@include limiter_admission
--@include limiter_points_level
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local estimate = tonumber(ARGV[3])
local points = points_now(capacity, refill, now)
local admitted = points >= estimate
if admitted then
  points = points - estimate
end
redis.call("HSET", KEYS[1], "points", tostring(points), "last", stamp)
-- An untouched limiter is full again after capacity / refill seconds.
redis.call("EXPIRE", KEYS[1], math.ceil(capacity / refill) + 1)
if not admitted then
  return {0, stamp, tostring((estimate - points) / refill)}
end
count_admission(KEYS[2], 0, tonumber(ARGV[4]))  -- points never wait: always immediate
return {1, stamp}
