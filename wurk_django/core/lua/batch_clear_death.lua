-- A dead job was sent back: the batch is no longer dead once none of its own jobs and
-- none of its children is. Called for the batch, then for each parent in turn.
-- KEYS: hash, died, kids, dead-batches. ARGV: bid.
-- Returns 1 cleared (go on to the parent); 0 still dead; 2 was not dead; -1 no batch.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'death') ~= '1' then return 2 end
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
for _, kid in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if redis.call('HGET', 'b-' .. kid, 'death') == '1' then return 0 end
end
redis.call('HDEL', KEYS[1], 'death')
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
