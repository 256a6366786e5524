-- Create a batch, linked to its parent (if any), indexed and tagged, with a hold in place
-- that the end of the same transaction releases (batch_release.lua) once its jobs and
-- children are written: a child is counted by its parent before any of its jobs runs.
-- KEYS: hash, jids, batches, parent hash, parent kids, parent pkids, parent skids, tag sets...
-- ARGV: bid, hold token, expiry s, now, trim before, index cap, has parent, field, value...
-- Returns 1 created; 0 the bid is taken; -1 the parent does not exist.
local hash, jids = KEYS[1], KEYS[2]
local bid, expiry = ARGV[1], tonumber(ARGV[3])
if redis.call('EXISTS', hash) == 1 then return 0 end
if ARGV[7] == '1' then
  if redis.call('EXISTS', KEYS[4]) == 0 then return -1 end
  local ttl = redis.call('TTL', KEYS[4])
  if ttl < 1 then ttl = expiry end
  for i = 5, 7 do
    redis.call('SADD', KEYS[i], bid)
    if redis.call('TTL', KEYS[i]) == -1 then redis.call('EXPIRE', KEYS[i], ttl) end
  end
end
local fields = {}
for i = 8, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', hash, unpack(fields)) end
redis.call('HSET', hash, 'total', 0, 'pending', 1, 'failures', 0)
redis.call('EXPIRE', hash, expiry)
redis.call('SADD', jids, ARGV[2])
redis.call('EXPIRE', jids, expiry)
redis.call('ZADD', KEYS[3], ARGV[4], bid)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[5])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[6]) + 1))
for i = 8, #KEYS do
  redis.call('SADD', KEYS[i], bid)
  if redis.call('TTL', KEYS[i]) < expiry then redis.call('EXPIRE', KEYS[i], expiry) end
end
return 1
