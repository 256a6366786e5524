-- Included by the limiter scripts (`--@include limiter_admission`): books an admitted
-- call in the limiter's stats hash. Under 50 ms of waiting it was immediate; otherwise it
-- waited, and the wait is added in milliseconds (Wurk's wait_ms) and in whole seconds
-- (Sidekiq Enterprise's wait_time). The hash lives `ttl` seconds from its last use.
local function count_admission(stats_key, waited, ttl)
  if waited < 50 then
    redis.call("HINCRBY", stats_key, "immediate", 1)
  else
    local before = tonumber(redis.call("HGET", stats_key, "wait_ms") or "0")
    local after = redis.call("HINCRBY", stats_key, "wait_ms", math.floor(waited))
    redis.call("HINCRBY", stats_key, "waited", 1)
    redis.call("HINCRBY", stats_key, "wait_time", math.floor(after / 1000) - math.floor(before / 1000))
  end
  redis.call("EXPIRE", stats_key, ttl)
end
