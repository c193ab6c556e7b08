#!lua
--[[
  login_attempt: counts one login attempt before its password is checked, unless a limit is
  reached already; so parallel guesses can never pass a limit. Counts lapse `window` seconds
  after their first attempt. A login that succeeds, or whose password was never checked, is
  taken back by login_undo.

  KEYS[1]  pair  string  attempts of one name from one network (an IPv4 address, an IPv6 /64)
  KEYS[2]  net   string  attempts from that network, whatever the name

  ARGV[1]  most attempts of a pair in a window
  ARGV[2]  most attempts of a network in a window
  ARGV[3]  the window (seconds)

  Output: JSON. {} when counted (go on and check the password); else
  {"err":"rate_limited","wait_ms":n}, n the whole seconds (at least 1) until the counter that
  is full lapses, in ms; nothing counted.
  Events: none.
  Uses: none.
]]
local pair, net = KEYS[1], KEYS[2]
local max_pair, max_net, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

for _, limit in ipairs({ { pair, max_pair }, { net, max_net } }) do
  if (tonumber(rcall('GET', limit[1])) or 0) >= limit[2] then
    local ttl = rcall('TTL', limit[1])
    if ttl < 0 then
      -- A counter without its expiry would hold forever: give it one.
      rcall('EXPIRE', limit[1], window)
      ttl = window
    end
    return cjson.encode({ err = 'rate_limited', wait_ms = math.max(ttl, 1) * 1000 })
  end
end
for _, key in ipairs({ pair, net }) do
  rcall('INCR', key)
  if rcall('TTL', key) < 0 then rcall('EXPIRE', key, window) end
end
return '{}'
