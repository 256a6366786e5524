-- Move up to ARGV[1] jobs, oldest first, from the queues in fetch order into their
-- private lists (with prefetch for the threads waiting in this process).
-- KEYS: public1, private1, public2, private2, ...; a queue is drained before the next.
-- Returns a flat list {pair index (1-based), payload, ...}, possibly empty.
local want = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS, 2 do
  while want > 0 do
    local job = redis.call("LMOVE", KEYS[i], KEYS[i + 1], "RIGHT", "LEFT")
    if not job then
      break
    end
    out[#out + 1] = (i + 1) / 2
    out[#out + 1] = job
    want = want - 1
  end
  if want == 0 then
    break
  end
end
return out
