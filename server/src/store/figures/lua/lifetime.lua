#!lua flags=no-writes
--[[
  lifetime: the project's lifetime counters, read in one step: the totals tallied (`tally.lua`)
  plus the minutes not tallied yet, up to `upto`. Nothing when nothing was tallied yet, or when
  the tally is more than `behind` minutes behind (a reader does not sum that many minutes).

  KEYS[1]  tally  hash  code -> lifetime total; `minute`, the last minute tallied
  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  upto: the last minute to read (minutes since the epoch)
  ARGV[3]  behind: minutes after the tally read at most
  ARGV[4..] the counters' codes

  Output: an array, the counters' totals in the order of their codes (strings), or an empty
  array.
  Uses: K, bulk_read.
]]
local tally, prefix = KEYS[1], ARGV[1]
local upto, behind = tonumber(ARGV[2]), tonumber(ARGV[3])
local codes = {}
for i = 4, #ARGV do codes[#codes + 1] = ARGV[i] end
local cursor = tonumber(rcall('HGET', tally, 'minute'))
if not cursor or upto - cursor > behind then return {} end

local totals = bulk_read('HMGET', tally, codes)
for i = 1, #codes do totals[i] = tonumber(totals[i]) or 0 end
local m = cursor + 1
while m <= upto do
  local day = math.floor(m / 1440)
  local last = math.min(upto, day * 1440 + 1439)
  local fields = {}
  for minute = m, last do
    local of_day = minute % 1440
    for _, code in ipairs(codes) do fields[#fields + 1] = of_day .. ':' .. code end
  end
  local values = bulk_read('HMGET', prefix .. K.minute_stats .. day, fields)
  for i = 1, #fields do
    local n = tonumber(values[i])
    if n then
      local c = (i - 1) % #codes + 1
      totals[c] = totals[c] + n
    end
  end
  m = last + 1
end
for i = 1, #codes do totals[i] = string.format('%d', totals[i]) end
return totals
