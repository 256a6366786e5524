-- Add a callback to a batch that already exists. Entries are canonical JSON made by the
-- client, so the same [event, target, options] is found as a substring and added once.
-- KEYS: hash. ARGV: entry JSON, event, cap.
-- Returns 1 added; 0 already there; 2 the event has fired (it would never run);
-- -1 no such batch; -2 the cap is reached.
local hash = KEYS[1]
if redis.call('EXISTS', hash) == 0 then return -1 end
if redis.call('HGET', hash, ARGV[2]) == '1' then return 2 end
local current = redis.call('HGET', hash, 'callbacks') or ''
if current == '' or current == '[]' then
  redis.call('HSET', hash, 'callbacks', '[' .. ARGV[1] .. ']')
  return 1
end
if string.find(current, ARGV[1], 1, true) then return 0 end
if #cjson.decode(current) >= tonumber(ARGV[3]) then return -2 end
redis.call('HSET', hash, 'callbacks', string.sub(current, 1, -2) .. ',' .. ARGV[1] .. ']')
return 1
