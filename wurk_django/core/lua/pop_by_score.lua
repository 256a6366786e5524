-- Pop the lowest-scored member of a sorted set whose score is <= now.
-- KEYS[1]: `schedule` or `retry`; ARGV[1]: now, epoch seconds as float text.
-- Atomic, so two pollers can never promote the same entry.
local due = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE", "LIMIT", 0, 1)
if due[1] then
  redis.call("ZREM", KEYS[1], due[1])
  return due[1]
end
return nil
