-- Hold a batch open while a block that reopened it runs, so jobs finishing meanwhile
-- cannot drain it. KEYS: hash, jids. ARGV: hold token.
-- Returns 1 held; 0 that hold was already in place; -1 no such batch.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'pending', 1)
if redis.call('TTL', KEYS[2]) == -1 then
  local ttl = redis.call('TTL', KEYS[1])
  if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
end
return 1
