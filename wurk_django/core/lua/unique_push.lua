-- Take a unique job's lock and, when taken, write the job: one round trip per push.
-- KEYS[1]: the lock; KEYS[2]: `queue:<q>` or `schedule` (absent for "lock");
-- KEYS[3]: `queues` (mode "queue" only).
-- ARGV: jid, ttl seconds, mode ("queue", "schedule" or "lock"), payload, score, queue.
-- Returns 1 when the lock is taken now (and the job written), 2 when this same jid holds
-- it already (a push replayed after its reply was lost: it is in Redis, so it is not
-- written twice; for "lock", it may go), otherwise the jid of the job holding the lock.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "EX", ARGV[2]) then
  local holder = redis.call("GET", KEYS[1])
  if holder ~= ARGV[1] then
    return holder
  end
  return 2
end
if ARGV[3] == "queue" then
  redis.call("SADD", KEYS[3], ARGV[6])
  redis.call("LPUSH", KEYS[2], ARGV[4])
elseif ARGV[3] == "schedule" then
  redis.call("ZADD", KEYS[2], ARGV[5], ARGV[4])
end
return 1
