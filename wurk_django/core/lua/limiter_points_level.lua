-- Included by limiter_points.lua and limiter_points_refund.lua (`--@include
-- limiter_points_level`): the points of KEYS[1] (hash: points, last) at `now`, refilled
-- at `refill` per second since the last call and capped at `capacity`; a missing hash is
-- a full one, and a clock that went back refills nothing.
local function points_now(capacity, refill, now)
  local state = redis.call("HMGET", KEYS[1], "points", "last")
  local points = tonumber(state[1] or "") or capacity
  local elapsed = now - (tonumber(state[2] or "") or now)
  if elapsed < 0 then
    elapsed = 0
  end
  return math.min(capacity, points + elapsed * refill)
end
