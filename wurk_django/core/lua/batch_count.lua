-- Included by batch_push.lua and batch_schedule.lua (`--@include batch_count`): counts
-- the jids of ARGV[first], ARGV[first + step], ... into a batch (KEYS: hash, jids, died).
-- Each jid joins the live set once (a jid already there, such as a retry sent back by
-- hand, is not counted again); a dead jid sent back from the dead set returns to the live
-- set without being counted again. A batch that no longer exists counts nothing.
-- Returns newly counted, revived from the dead.
local function count_jobs(first, step)
  local added, revived = 0, 0
  if redis.call('EXISTS', KEYS[1]) == 0 then return 0, 0 end
  local has_dead = redis.call('EXISTS', KEYS[3]) == 1
  for i = first, #ARGV, step do
    local jid = ARGV[i]
    if has_dead and redis.call('SREM', KEYS[3], jid) == 1 then
      redis.call('SADD', KEYS[2], jid)
      revived = revived + 1
    elseif redis.call('SADD', KEYS[2], jid) == 1 then
      added = added + 1
    end
  end
  if added > 0 then
    redis.call('HINCRBY', KEYS[1], 'total', added)
    redis.call('HINCRBY', KEYS[1], 'pending', added)
  end
  if redis.call('TTL', KEYS[2]) == -1 then
    local ttl = redis.call('TTL', KEYS[1])
    if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
  end
  return added, revived
end
