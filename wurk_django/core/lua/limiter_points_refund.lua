-- Settle a points call: give back (or take) the difference between the estimate spent
-- and the points the call really used, refilling first, kept within [0, capacity].
-- KEYS: lmtr-p:<name>. ARGV: capacity, refill_per_s, delta (estimate - actual).
--@include limiter_points_level
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local points = points_now(capacity, refill, now) + tonumber(ARGV[3])
points = math.max(0, math.min(capacity, points))
redis.call("HSET", KEYS[1], "points", tostring(points), "last", stamp)
redis.call("EXPIRE", KEYS[1], math.ceil(capacity / refill) + 1)
return tostring(points)
