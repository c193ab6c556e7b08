#!lua flags=allow-oom
--[[
  delete_if: deletes a key, or a field of a hash, only while it holds the value the caller
  read: a lease given up by its holder only (not one another process took after it lapsed),
  a destroyed project's mark cleared only if no later destroy wrote another. Runs even when
  Redis is full (allow-oom): it only frees memory.

  KEYS[1]  key  string | hash  the lease, or the hash of marks

  ARGV[1]  the value it must hold
  ARGV[2]  the hash field (absent: KEYS[1] is a string)

  Output: 1 when deleted, 0 when it is gone or holds another value.
  Events: none.
  Uses: none.
]]
local key, value, field = KEYS[1], ARGV[1], ARGV[2]
if field then
  if rcall('HGET', key, field) ~= value then return 0 end
  return rcall('HDEL', key, field)
end
if rcall('GET', key) ~= value then return 0 end
return rcall('DEL', key)
