-- Push jobs of one queue into a batch: each jid joins the live set once (a jid already
-- there, such as a retry sent back by hand, is not counted again) and a dead jid sent
-- back from the dead set returns to the live set without being counted again.
-- KEYS: hash, jids, died, queues, queue:<q>
-- ARGV: guard, queue name, jid, payload, jid, payload...
-- A guard (the hold of the batch being created in the same transaction) pushes nothing
-- unless that creation happened: a batch that existed already (a re-run) or could not be
-- created gets no jobs. Without a guard, a batch that no longer exists still gets its
-- jobs pushed: they run, they are simply not counted.
-- Returns {newly counted (-1 refused by the guard), revived from the dead}.
local added, revived = 0, 0
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local has_dead = redis.call('EXISTS', KEYS[3]) == 1
  for i = 3, #ARGV, 2 do
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
redis.call('SADD', KEYS[4], ARGV[2])
local payloads = {}
for i = 4, #ARGV, 2 do payloads[#payloads + 1] = ARGV[i] end
for s = 1, #payloads, 500 do
  redis.call('LPUSH', KEYS[5], unpack(payloads, s, math.min(s + 499, #payloads)))
end
return {added, revived}
