-- Schedule jobs into a batch (perform_in / perform_at inside a block): counted now, as
-- jobs pushed to a queue are, and promoted later by the poller as plain pushes.
-- KEYS: hash, jids, died, schedule
-- ARGV: guard (see batch_push.lua), jid, score, payload, jid, score, payload...
-- Returns {newly counted (-1 refused by the guard), revived from the dead}.
local added, revived = 0, 0
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local has_dead = redis.call('EXISTS', KEYS[3]) == 1
  for i = 2, #ARGV, 3 do
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
end
for i = 2, #ARGV, 3 do redis.call('ZADD', KEYS[4], ARGV[i + 1], ARGV[i + 2]) end
return {added, revived}
