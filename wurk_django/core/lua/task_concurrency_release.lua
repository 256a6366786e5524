-- A job of a concurrency-limited task ended: free its slot and move waiting jobs (one per
-- free slot) to the front of their queue, each with a slot kept for it under its jid.
-- KEYS: slots, waiting list of this key and queue, queue:<q>, queues, the set of waiting
--       lists.
-- ARGV: jid (or '' to free nothing: the sweep), limit, lease (s), queue name, member
--       naming the waiting list in the set.
-- Returns how many jobs were moved.
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local lease = tonumber(ARGV[3])
if ARGV[1] ~= "" then
  redis.call("ZREM", KEYS[1], ARGV[1])
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. t[1] .. "." .. string.format("%06d", tonumber(t[2])))
local moved = 0
while redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) do
  local job = redis.call("LPOP", KEYS[2])
  if not job then
    break
  end
  local ok, decoded = pcall(cjson.decode, job)
  local jid = ok and type(decoded) == "table" and decoded["jid"]
  if type(jid) == "string" then
    redis.call("ZADD", KEYS[1], now + lease, jid)
  end
  redis.call("RPUSH", KEYS[3], job)
  moved = moved + 1
end
if moved > 0 then
  redis.call("SADD", KEYS[4], ARGV[4])
  redis.call("EXPIRE", KEYS[1], math.ceil(lease) * 2 + 1)
end
if redis.call("LLEN", KEYS[2]) == 0 then
  redis.call("SREM", KEYS[5], ARGV[5])
end
return moved
