-- Count a call against a sliding-window limiter: at most `limit` calls in any interval.
-- KEYS: lmtr-w:<name> (one member per call, scored with its time), lmtr-stats:<name>.
-- ARGV: limit, interval (s), used, nonce, waited (ms), stats ttl (s).
-- Returns {1, now}, or {0, now, seconds until enough calls leave the window}.
--@include limiter_admission
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = t[1] .. "." .. string.format("%06d", tonumber(t[2]))
local limit = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local used = tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. string.format("%.6f", now - interval))
local count = redis.call("ZCARD", KEYS[1])
if count + used > limit then
  -- The call fits once the oldest `count + used - limit` calls have left the window.
  local leaving = redis.call("ZRANGE", KEYS[1], count + used - limit - 1,
                             count + used - limit - 1, "WITHSCORES")
  local wait = 0
  if leaving[2] then
    wait = tonumber(leaving[2]) + interval - now
  end
  return {0, stamp, tostring(wait)}
end
for i = 1, used do
  redis.call("ZADD", KEYS[1], now, stamp .. ":" .. ARGV[4] .. ":" .. i)
end
-- Every member is stale one interval after it was added: the key needs no longer life.
redis.call("EXPIRE", KEYS[1], math.ceil(interval) + 1)
count_admission(KEYS[2], tonumber(ARGV[5]), tonumber(ARGV[6]))
return {1, stamp}
