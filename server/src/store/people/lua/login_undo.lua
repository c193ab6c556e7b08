#!lua flags=allow-oom
--[[
  login_undo: takes back an attempt login_attempt counted, when it was no wrong guess: the
  password was right (then the name's earlier failures from that network are forgotten too),
  or it was never checked (no verification slot came free). Counters never go below zero and
  keep their expiry; one that lapsed meanwhile stays gone. Runs even when Redis is full
  (allow-oom): it only shrinks counters, and an attempt counted must be taken back.

  KEYS[1]  pair  string  attempts of one name from one network
  KEYS[2]  net   string  attempts from that network, whatever the name

  ARGV[1]  1 when the password was right (forget the pair's count), else 0 (take back one)

  Output: the network's count left.
  Events: none.
  Uses: none.
]]
local pair, net = KEYS[1], KEYS[2]
local success = ARGV[1] == '1'

local function take_one(key)
  local n = tonumber(rcall('GET', key)) or 0
  if n > 0 then return rcall('DECR', key) end
  return 0
end

if success then rcall('DEL', pair) else take_one(pair) end
return take_one(net)
