-- Start a job of a task with a cluster-wide concurrency limit, or park it.
-- KEYS: slots (jid -> lease expiry), waiting list of this key and queue, the process's
--       private list, the set of waiting lists.
-- ARGV: jid, limit, lease (s), fetched bytes, from_private ('1' with reliable fetch),
--       member naming the waiting list in the set, the bytes to park (the fetched ones,
--       or those with the concurrency stamp added).
-- Returns 1 (run it: a slot is its own), 0 (parked: the waiting list holds it now, out of
-- the private list), or -1 (the private list no longer holds it: another copy exists).
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local lease = tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. t[1] .. "." .. string.format("%06d", tonumber(t[2])))
-- A slot already under this jid was kept for it when it was moved out of the waiting
-- list, or is its own from a run whose process died: it is this job's.
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("ZADD", KEYS[1], now + lease, ARGV[1])
  redis.call("EXPIRE", KEYS[1], math.ceil(lease) * 2 + 1)
  return 1
end
if ARGV[5] == "1" and redis.call("LREM", KEYS[3], 1, ARGV[4]) == 0 then
  return -1
end
redis.call("RPUSH", KEYS[2], ARGV[7])
redis.call("SADD", KEYS[4], ARGV[6])
return 0
