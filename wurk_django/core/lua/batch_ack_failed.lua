-- A batch job raised and will be retried: it is failing now, once per jid. A jid that
-- is not live (it already succeeded or died, and this is a duplicate run) is left alone.
-- KEYS: hash, jids, failed. ARGV: jid.
-- Returns 1 newly failing, 0 otherwise.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'failures', 1)
if redis.call('TTL', KEYS[3]) == -1 then
  local ttl = redis.call('TTL', KEYS[1])
  if ttl > 0 then redis.call('EXPIRE', KEYS[3], ttl) end
end
return 1
