-- Settle a fetched job a rate limiter refused: take it out of the process's private list
-- and put it in a sorted set (`schedule` to run again later, or `dead`), as one step.
-- KEYS: the private list (with basic fetch: any key, unused), the target sorted set.
-- ARGV: fetched bytes, new member, score, from_private ('1' with reliable fetch),
--       dead-set age cut (epoch s, '' for none), dead-set size cap.
-- Returns 0, writing nothing, when the private list no longer holds the job: another
-- copy of it exists (given back by the reaper), so scheduling this one would double it.
if ARGV[4] == "1" and redis.call("LREM", KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[2])
if ARGV[5] ~= "" then
  -- Sidekiq's own trim of `dead`: by age, then keep the newest size cap - 1.
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[5])
  redis.call("ZREMRANGEBYRANK", KEYS[2], 0, -tonumber(ARGV[6]))
end
return 1
