-- Set one field of an existing batch (`invalidated`, `linger`); never creates a batch.
-- KEYS: hash. ARGV: field, value. Returns 1 done, 0 no such batch.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
