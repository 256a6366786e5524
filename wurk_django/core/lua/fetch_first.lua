-- Move the oldest job of the first non-empty queue into its private list (pro §1.2).
-- KEYS: public1, private1, public2, private2, ... in fetch order; never reordered.
-- Returns {pair index (1-based), payload} or nil.
for i = 1, #KEYS, 2 do
  local job = redis.call("LMOVE", KEYS[i], KEYS[i + 1], "RIGHT", "LEFT")
  if job then
    return {(i + 1) / 2, job}
  end
end
return nil
