-- Take jobs out of a batch's accounting (the jobs themselves stay where they are and
-- still run; their acks no longer count). If that leaves nothing to wait for, a no-op
-- job in the callback queue lets a worker fire the callbacks (see batch_release.lua).
-- KEYS: hash, jids, failed, pkids, queues, queue:<callback queue>
-- ARGV: no-op jid, no-op payload, callback queue name, jid...
-- Returns how many jobs were removed, or -1 when there is no such batch.
local hash = KEYS[1]
if redis.call('EXISTS', hash) == 0 then return -1 end
local removed = 0
for i = 4, #ARGV do
  if redis.call('SREM', KEYS[2], ARGV[i]) == 1 then
    removed = removed + 1
    if redis.call('SREM', KEYS[3], ARGV[i]) == 1 then
      redis.call('HINCRBY', hash, 'failures', -1)
    end
  end
end
if removed == 0 then return 0 end
redis.call('HINCRBY', hash, 'total', -removed)
redis.call('HINCRBY', hash, 'pending', -removed)
if redis.call('SCARD', KEYS[2]) == 0 and redis.call('SCARD', KEYS[4]) == 0 then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('HINCRBY', hash, 'pending', 1)
  local ttl = redis.call('TTL', hash)
  if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
  redis.call('SADD', KEYS[5], ARGV[3])
  redis.call('LPUSH', KEYS[6], ARGV[2])
end
return removed
