-- Release a block's hold. When nothing is left that would ever evaluate the batch (no
-- live job, no child still running), the hold's place goes to a no-op job in the
-- callback queue instead: a worker then fires the callbacks, with the retries and
-- reclaims every job has, rather than the pushing process (which nothing re-drives).
-- KEYS: hash, jids, pkids, queues, queue:<callback queue>
-- ARGV: hold token, no-op jid, no-op payload, callback queue name
-- Returns 1 released; 2 released and the no-op job pushed; 0 not held; -1 no batch.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SREM', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('SCARD', KEYS[2]) == 0 and redis.call('SCARD', KEYS[3]) == 0 then
  -- The hold's count in `pending` passes to the no-op job.
  redis.call('SADD', KEYS[2], ARGV[2])
  local ttl = redis.call('TTL', KEYS[1])
  if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
  redis.call('SADD', KEYS[4], ARGV[4])
  redis.call('LPUSH', KEYS[5], ARGV[3])
  return 2
end
redis.call('HINCRBY', KEYS[1], 'pending', -1)
return 1
