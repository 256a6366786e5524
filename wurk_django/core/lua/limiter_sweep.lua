-- Drop names from the limiter list whose meta hash has expired.
-- KEYS: lmtr-list, then lmtr:<name> for each name. ARGV: the names, in the same order.
-- The check and the removal are one step, so a limiter registered again meanwhile stays.
local removed = 0
for i = 1, #ARGV do
  if redis.call("EXISTS", KEYS[i + 1]) == 0 then
    removed = removed + redis.call("SREM", KEYS[1], ARGV[i])
  end
end
return removed
