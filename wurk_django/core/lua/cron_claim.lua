-- Claim one occurrence of a cron loop before anything is pushed: a
-- compare-and-swap on the loop's next-fire mark, so of several pollers that believe
-- they lead, exactly one wins each slot.
-- KEYS[1]: `loops:<lid>`. ARGV[1]: the slot's token (the raw `nf` read, or the
-- computed slot when `nf` was empty); ARGV[2]: now; ARGV[3]: the next slot or "".
-- Returns 1 if claimed (marks moved), 0 if another poller owns this slot.
if redis.call("HEXISTS", KEYS[1], "schedule") == 0 then
  return 0 -- unregistered meanwhile: do not recreate half a hash
end
local nf = redis.call("HGET", KEYS[1], "nf")
if nf and nf ~= "" then
  if nf ~= ARGV[1] then
    return 0
  end
else
  -- A winner whose schedule never matches again cleared `nf`; its `lf` is after the slot.
  local lf = tonumber(redis.call("HGET", KEYS[1], "lf") or "")
  if lf and lf >= tonumber(ARGV[1]) then
    return 0
  end
end
redis.call("HSET", KEYS[1], "lf", ARGV[2])
if ARGV[3] ~= "" then
  redis.call("HSET", KEYS[1], "nf", ARGV[3])
else
  redis.call("HDEL", KEYS[1], "nf")
end
return 1
