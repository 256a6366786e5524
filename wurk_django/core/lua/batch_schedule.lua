-- Schedule jobs into a batch (perform_in / perform_at inside a block): counted now, as
-- jobs pushed to a queue are, and promoted later by the poller as plain pushes.
-- KEYS: hash, jids, died, schedule
-- ARGV: guard (see batch_push.lua), jid, score, payload, jid, score, payload...
-- Returns {newly counted (-1 refused by the guard), revived from the dead}.
--@include batch_count
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {-1, 0} end
local added, revived = count_jobs(2, 3)
for i = 2, #ARGV, 3 do redis.call('ZADD', KEYS[4], ARGV[i + 1], ARGV[i + 2]) end
return {added, revived}
