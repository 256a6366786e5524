-- Register a rate limiter: its meta hash, and its name in the dashboard's list.
-- KEYS: lmtr:<name>, lmtr-list. ARGV: type, options JSON, fingerprint, ttl, name.
-- The name joins the list only when the hash is new (a new limiter, or its meta had
-- expired), so registering a known limiter again writes nothing to the list.
local created = redis.call("EXISTS", KEYS[1]) == 0
redis.call("HSET", KEYS[1], "type", ARGV[1], "options", ARGV[2], "fingerprint", ARGV[3])
redis.call("EXPIRE", KEYS[1], tonumber(ARGV[4]))
if created then
  redis.call("SADD", KEYS[2], ARGV[5])
  return 1
end
return 0
