-- A batch job succeeded (or was skipped on purpose). Only the call that removes the jid
-- counts it, so a job run twice (reclaimed after a crash) is counted once.
-- KEYS: hash, jids, failed, pkids, skids. ARGV: jid.
-- Returns {removed, pending, live, pending children, children not succeeded};
-- live is -1 when the batch no longer exists (nothing fires).
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0, -1, -1, -1} end
if redis.call('SREM', KEYS[3], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'failures', -1)
end
local removed = redis.call('SREM', KEYS[2], ARGV[1])
local pending
if removed == 1 then
  pending = redis.call('HINCRBY', KEYS[1], 'pending', -1)
else
  pending = tonumber(redis.call('HGET', KEYS[1], 'pending') or '0')
end
return {removed, pending, redis.call('SCARD', KEYS[2]), redis.call('SCARD', KEYS[4]),
        redis.call('SCARD', KEYS[5])}
