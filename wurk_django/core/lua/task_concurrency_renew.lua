-- Extend the leases of slots this process still holds (its jobs are running).
-- KEYS: slots. ARGV: lease (s), then the jids. A slot already reclaimed stays gone.
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local lease = tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  renewed = renewed + redis.call("ZADD", KEYS[1], "XX", "CH", now + lease, ARGV[i])
end
redis.call("EXPIRE", KEYS[1], math.ceil(lease) * 2 + 1)
return renewed
