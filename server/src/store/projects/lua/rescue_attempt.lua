#!lua
--[[
  rescue_attempt: counts one rescue-me post from a network against its GCRA limit, unless
  the limit holds it back: `per_minute` posts a minute, as many at once. A network's state is
  one string, its theoretical arrival time, which expires as soon as it holds nothing back, so
  networks that stopped posting cost no memory.

  KEYS[1]  limiter  string  the network's theoretical arrival time (ms), expiring

  ARGV[1]  now (ms)
  ARGV[2]  posts a minute, and at once (at least 1)

  Output: JSON. {} when counted (go on); else {"err":"rate_limited","wait_ms":n}, the ms until a
  post may go (at least 1); nothing counted.
  Events: none.
  Uses: gcra_room.
]]
local limiter = KEYS[1]
local now, per_minute = tonumber(ARGV[1]), math.max(tonumber(ARGV[2]), 1)

local interval = 60000 / per_minute
local tat = math.max(tonumber(rcall('GET', limiter)) or now, now)
-- `per_minute` posts at once take the whole minute of tolerance.
local room, wait = gcra_room(tat, interval, 60000, 1, now)
if room == 0 then return cjson.encode({ err = 'rate_limited', wait_ms = math.max(wait, 1) }) end
local next_tat = tat + interval
rcall('SET', limiter, string.format('%d', math.ceil(next_tat)), 'PX', math.max(math.ceil(next_tat - now), 1))
return '{}'
