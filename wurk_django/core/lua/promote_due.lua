-- Move due members of `schedule` or `retry` in one step each, computed by the poller.
-- KEYS[1]: the sorted set; KEYS[2]: `queues`; KEYS[3]: `dead`; KEYS[4..]: queue lists.
-- ARGV: groups of four: the member, the index in KEYS of where it goes (0: nowhere, a
-- client middleware halted it; 3: the dead set, it cannot be pushed; 4 or more: that
-- queue), the payload to write there, and the queue's name (or, for `dead`, the score).
-- A member another poller moved already is skipped. The push comes before the ZREM, so
-- a script cut short (a Redis error halfway) leaves a job twice, never lost. Returns the
-- number of members moved.
local moved = 0
for i = 1, #ARGV, 4 do
  local member = ARGV[i]
  if redis.call("ZSCORE", KEYS[1], member) then
    local target = tonumber(ARGV[i + 1])
    if target == 3 then
      redis.call("ZADD", KEYS[3], ARGV[i + 3], ARGV[i + 2])
    elseif target > 3 then
      redis.call("SADD", KEYS[2], ARGV[i + 3])
      redis.call("LPUSH", KEYS[target], ARGV[i + 2])
    end
    redis.call("ZREM", KEYS[1], member)
    moved = moved + 1
  end
end
return moved
