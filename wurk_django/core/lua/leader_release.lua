-- Delete a lock only while it still holds our value (ent `release_if_owner`).
-- KEYS[1]: the lock; ARGV[1]: the owner. Returns 1 if deleted, else 0. One step: a
-- GET then DEL from the client could delete a lock that expired and was re-taken.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
