-- Fire a batch's `complete` and `success` callbacks if it has earned them, exactly once:
-- the conditions are checked, the marker claimed and the callback jobs pushed in this
-- one script, so neither a crash nor two workers finishing at once can fire twice or
-- lose a fire. A `complete`/`success` callback job is a job of the parent batch (the
-- parent waits for it); then the parent learns this child is complete / succeeded, and
-- its state is returned so the caller evaluates it next: children before parents.
-- Safe to call again at any time (a re-drive after a crash): it fires only what is due
-- and not fired, and tells the parent again (set removals do nothing twice).
-- KEYS: 1 hash, 2 jids, 3 pkids, 4 skids, 5 complete marker, 6 success marker, 7 queues,
--       8 queue:<callback queue>, 9 failed, 10 died, 11 kids, 12 death marker,
--       13 parent hash, 14 parent jids, 15 parent pkids, 16 parent skids
-- ARGV: 1 bid, 2 callbacks as read, 3 now, 4 marker ttl, 5 callback queue name,
--       6 has parent, 7 default linger, 8 n, then n x (jid, payload) for complete,
--       then m, then m x (jid, payload) for success
-- Returns {state, fired complete, fired success, parent live, parent pkids,
--          parent pending, parent skids}; state -1 no batch, -2 callbacks changed since
--          read (read again), 0 not complete, 1 evaluated.
local hash = KEYS[1]
if redis.call('EXISTS', hash) == 0 then return {-1, 0, 0, -1, -1, -1, -1} end
if (redis.call('HGET', hash, 'callbacks') or '') ~= ARGV[2] then
  return {-2, 0, 0, -1, -1, -1, -1}
end
if redis.call('SCARD', KEYS[2]) ~= 0 or redis.call('SCARD', KEYS[3]) ~= 0 then
  return {0, 0, 0, -1, -1, -1, -1}
end
local bid, now, ttl = ARGV[1], ARGV[3], tonumber(ARGV[4])
local parent = ARGV[6] == '1' and redis.call('EXISTS', KEYS[13]) == 1

local function push(first, count)
  if count == 0 then return end
  redis.call('SADD', KEYS[7], ARGV[5])
  for i = first, first + 2 * count - 1, 2 do
    local jid, payload = ARGV[i], ARGV[i + 1]
    if parent and redis.call('SADD', KEYS[14], jid) == 1 then
      redis.call('HINCRBY', KEYS[13], 'total', 1)
      redis.call('HINCRBY', KEYS[13], 'pending', 1)
    end
    redis.call('LPUSH', KEYS[8], payload)
  end
  if parent and redis.call('TTL', KEYS[14]) == -1 then
    local pttl = redis.call('TTL', KEYS[13])
    if pttl > 0 then redis.call('EXPIRE', KEYS[14], pttl) end
  end
end

local n_complete = tonumber(ARGV[8])
local success_at = 9 + 2 * n_complete
local n_success = tonumber(ARGV[success_at])
local fired_complete, fired_success = 0, 0
if redis.call('SET', KEYS[5], '1', 'NX', 'EX', ttl) then
  redis.call('HSET', hash, 'complete', '1', 'complete_at', now)
  push(9, n_complete)
  fired_complete = 1
end
if parent then redis.call('SREM', KEYS[15], bid) end

local pending = tonumber(redis.call('HGET', hash, 'pending') or '0')
if pending <= 0 and redis.call('SCARD', KEYS[4]) == 0 then
  if redis.call('SET', KEYS[6], '1', 'NX', 'EX', ttl) then
    redis.call('HSET', hash, 'success', '1', 'success_at', now)
    push(success_at + 1, n_success)
    fired_success = 1
    -- Succeeded: keep the record for `linger` seconds, then let it go.
    local linger = tonumber(redis.call('HGET', hash, 'linger') or '') or tonumber(ARGV[7])
    for _, i in ipairs({1, 2, 3, 4, 5, 6, 9, 10, 11, 12}) do
      redis.call('EXPIRE', KEYS[i], linger)
    end
  end
  if parent then redis.call('SREM', KEYS[16], bid) end
end
if not parent then return {1, fired_complete, fired_success, -1, -1, -1, -1} end
return {1, fired_complete, fired_success, redis.call('SCARD', KEYS[14]),
        redis.call('SCARD', KEYS[15]), tonumber(redis.call('HGET', KEYS[13], 'pending') or '0'),
        redis.call('SCARD', KEYS[16])}
