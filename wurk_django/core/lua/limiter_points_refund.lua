-- Settle a points call: give back (or take) the difference between the estimate spent
-- and the points the call really used, refilling first, kept within [0, capacity].
-- KEYS: lmtr-p:<name>. ARGV: capacity, refill_per_s, delta (estimate - actual).
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local state = redis.call("HMGET", KEYS[1], "points", "last")
local points = tonumber(state[1] or "") or capacity
local last = tonumber(state[2] or "") or now
local elapsed = now - last
if elapsed < 0 then
  elapsed = 0
end
points = math.min(capacity, points + elapsed * refill) + tonumber(ARGV[3])
points = math.max(0, math.min(capacity, points))
redis.call("HSET", KEYS[1], "points", tostring(points), "last", stamp)
redis.call("EXPIRE", KEYS[1], math.ceil(capacity / refill) + 1)
return tostring(points)
