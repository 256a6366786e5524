-- A batch job died (retries exhausted, discarded, poisoned, killed): it has run for the
-- last time, so it leaves the live set and joins the dead set; `pending` keeps counting
-- it, since it never succeeded (a dead batch cannot succeed until the job is retried).
-- KEYS: hash, jids, died, failed, pkids. ARGV: jid.
-- Returns {removed, live, dead (this jid is dead), pending children}; live is -1 when
-- the batch no longer exists.
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, -1, 0, -1} end
if redis.call('SREM', KEYS[2], ARGV[1]) == 0 then
  return {0, redis.call('SCARD', KEYS[2]), redis.call('SISMEMBER', KEYS[3], ARGV[1]),
          redis.call('SCARD', KEYS[5])}
end
if redis.call('SREM', KEYS[4], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'failures', -1)
end
redis.call('SADD', KEYS[3], ARGV[1])
if redis.call('TTL', KEYS[3]) == -1 then
  local ttl = redis.call('TTL', KEYS[1])
  if ttl > 0 then redis.call('EXPIRE', KEYS[3], ttl) end
end
return {1, redis.call('SCARD', KEYS[2]), 1, redis.call('SCARD', KEYS[5])}
