-- A job of this batch (or of a batch below it) died: mark the batch dead, index it in
-- `dead-batches`, and push its `death` callbacks the first time only, ever: the marker
-- is claimed in the same script that pushes them.
-- KEYS: hash, death marker, dead-batches, queues, queue:<callback queue>
-- ARGV: bid, callbacks as read, now, marker ttl, callback queue name, trim before,
--       index cap, payload...
-- Returns 1 fired; 0 already fired; -1 no batch; -2 callbacks changed since read.
local hash = KEYS[1]
if redis.call('EXISTS', hash) == 0 then return -1 end
if (redis.call('HGET', hash, 'callbacks') or '') ~= ARGV[2] then return -2 end
if redis.call('HGET', hash, 'death') ~= '1' then
  redis.call('HSET', hash, 'death', '1', 'death_at', ARGV[3])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[6])
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[7]) + 1))
end
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[4])) then return 0 end
if #ARGV >= 8 then
  redis.call('SADD', KEYS[4], ARGV[5])
  for i = 8, #ARGV do redis.call('LPUSH', KEYS[5], ARGV[i]) end
end
return 1
