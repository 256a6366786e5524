-- Push jobs of one queue into a batch, counted as batch_count.lua says.
-- KEYS: hash, jids, died, queues, queue:<q>
-- ARGV: guard, queue name, jid, payload, jid, payload...
-- A guard (the hold of the batch being created in the same transaction) pushes nothing
-- unless that creation happened: a batch that existed already (a re-run) or could not be
-- created gets no jobs. Without a guard, a batch that no longer exists still gets its
-- jobs pushed: they run, they are simply not counted.
-- Returns {newly counted (-1 refused by the guard), revived from the dead}.
--@include batch_count
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {-1, 0} end
local added, revived = count_jobs(3, 2)
redis.call('SADD', KEYS[4], ARGV[2])
local payloads = {}
for i = 4, #ARGV, 2 do payloads[#payloads + 1] = ARGV[i] end
for s = 1, #payloads, 500 do
  redis.call('LPUSH', KEYS[5], unpack(payloads, s, math.min(s + 499, #payloads)))
end
return {added, revived}
