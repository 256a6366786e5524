-- Give an unfinished job back to its public queue at shutdown.
-- KEYS[1]: private list, KEYS[2]: public queue; ARGV[1]: the exact payload.
-- Only if it is still in the private list: a racing ACK makes this a no-op.
if redis.call("LREM", KEYS[1], 1, ARGV[1]) > 0 then
  redis.call("RPUSH", KEYS[2], ARGV[1])
  return 1
end
return 0
