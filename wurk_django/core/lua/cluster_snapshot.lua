-- The cluster's numbers in one round trip: what a Prometheus scrape and a history
-- snapshot read. The work is O(queues + processes): sizes come from LLEN/ZCARD and a
-- queue's latency from its oldest job alone, never from a walk over the jobs.
-- KEYS: stat:processed, stat:failed, schedule, retry, dead, queues, processes, paused,
-- lmtr-list (the rate limiters' names: only their count is read here).
-- ARGV[1]: the queue key prefix ("queue:").
-- Returns {processed, failed, scheduled, retries, dead,
--          {queue, size, oldest enqueued_at as JSON text or false, paused 0/1, ...},
--          {identity, busy, concurrency, ...}, limiters}.
-- A key that holds another type than Wurk keeps there reads as -1 (a size), false (a
-- latency), "WRONGTYPE" (a counter) or is left out (a process), so one stray key costs
-- one sample, not the scrape.

local function ok(reply)
  if type(reply) == "table" and reply.err then
    return nil
  end
  return reply
end

local function size(command, key)
  local reply = ok(redis.pcall(command, key))
  if reply == nil then
    return -1
  end
  return reply
end

local function counter(key)
  local reply = ok(redis.pcall("GET", key))
  if reply == nil then
    return "WRONGTYPE"  -- a missing counter is false (read as 0), this is no number
  end
  return reply
end

local function members(key)
  local reply = ok(redis.pcall("SMEMBERS", key))
  if reply == nil then
    return {}
  end
  return reply
end

local function oldest_enqueued_at(key)
  local raw = ok(redis.pcall("LINDEX", key, -1))
  if not raw then
    return false
  end
  local decoded, job = pcall(cjson.decode, raw)
  if not decoded or type(job) ~= "table" or job["enqueued_at"] == nil then
    return false
  end
  return cjson.encode(job["enqueued_at"])
end

local paused = {}
for _, name in ipairs(members(KEYS[8])) do
  paused[name] = true
end

local queues = {}
for _, name in ipairs(members(KEYS[6])) do
  local key = ARGV[1] .. name
  queues[#queues + 1] = name
  queues[#queues + 1] = size("LLEN", key)
  queues[#queues + 1] = oldest_enqueued_at(key)
  queues[#queues + 1] = paused[name] and 1 or 0
end

local processes = {}
for _, identity in ipairs(members(KEYS[7])) do
  local fields = ok(redis.pcall("HMGET", identity, "busy", "info"))
  -- A member whose hash expired is a process that died without unregistering.
  if fields and fields[2] then
    local concurrency = 0
    local decoded, info = pcall(cjson.decode, fields[2])
    if decoded and type(info) == "table" and type(info["concurrency"]) == "number" then
      concurrency = info["concurrency"]
    end
    processes[#processes + 1] = identity
    processes[#processes + 1] = tonumber(fields[1]) or 0
    processes[#processes + 1] = concurrency
  end
end

return {counter(KEYS[1]), counter(KEYS[2]), size("ZCARD", KEYS[3]), size("ZCARD", KEYS[4]),
        size("ZCARD", KEYS[5]), queues, processes, size("SCARD", KEYS[9])}
