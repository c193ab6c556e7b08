#!lua flags=allow-oom
--[[
  login_name: the login attempts of one account name from every network, so that guesses
  spread over many addresses are limited too. `count` counts one attempt before the password is
  checked, unless the limit is reached already (parallel guesses cannot pass it); `undo` takes
  one back (a login that succeeded, or whose password was never checked). A login from a
  browser the account logged in from before (its device cookie) is not counted here, so that
  guesses from elsewhere cannot lock the owner out. Runs even when Redis is full (allow-oom):
  an attempt counted must be taken back, and a counter is a few bytes.

  KEYS[1]  name  string  attempts of one name from every network in the window

  ARGV[1]  count | undo
  ARGV[2]  most attempts in a window
  ARGV[3]  the window (seconds), from the first attempt

  Output: JSON. {} when counted or taken back; else {"err":"rate_limited","wait_ms":n}, n the
  whole seconds (at least 1) until the counter lapses, in ms; nothing counted.
  Events: none.
  Uses: none.
]]
local key, mode = KEYS[1], ARGV[1]
local max, window = tonumber(ARGV[2]), tonumber(ARGV[3])

local n = tonumber(rcall('GET', key)) or 0
if mode == 'undo' then
  if n > 0 then rcall('DECR', key) end
  return '{}'
end
if n >= max then
  local ttl = rcall('TTL', key)
  if ttl < 0 then
    -- A counter without its expiry would hold forever: give it one.
    rcall('EXPIRE', key, window)
    ttl = window
  end
  return cjson.encode({ err = 'rate_limited', wait_ms = math.max(ttl, 1) * 1000 })
end
rcall('INCR', key)
if rcall('TTL', key) < 0 then rcall('EXPIRE', key, window) end
return '{}'
