-- Take or renew cluster leadership in one step; never GET then EXPIRE from
-- the client, or our EXPIRE could extend a lock another process took in between.
-- KEYS[1]: `dear-leader`; KEYS[2]: `leader-token`.
-- ARGV[1]: our identity; ARGV[2]: TTL in ms; ARGV[3]: "1" if we believe we hold it.
-- Returns 0 when another process leads, else the fencing token of our term: a fresh
-- INCR on every gain, the current value on a renewal.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  if redis.call("GET", KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  if ARGV[3] == "1" then
    return tonumber(redis.call("GET", KEYS[2]) or "0")
  end
end
return redis.call("INCR", KEYS[2])
