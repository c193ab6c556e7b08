#!lua
--[[
  tally: adds whole minutes of the per-minute counters (`st:<day>` fields "<minute of day>:<code>",
  kept 35 days) to the project's lifetime counters, each minute exactly once: the minutes after
  the last one tallied (`tally` field `minute`, minutes since the epoch), up to `upto`. A minute
  moves from the per-minute data to the totals in this one step, so a reader that adds the
  untallied minutes to the totals in one step too (`lifetime.lua`) sees every counter only grow.
  Days without counters are skipped whole; at most `budget` minutes of days with counters are
  read per call (the caller calls again until the result reaches `upto`).

  KEYS[1]  tally  hash  code -> lifetime total; `minute`, the last minute tallied
  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  upto: the last minute to tally (minutes since the epoch)
  ARGV[3]  budget: minutes read at most
  ARGV[4]  start: the first minute to tally when nothing was tallied yet
  ARGV[5..] the counters' codes

  Output: the last minute tallied after this call.
  Uses: must_exist, K, bulk_read, hincr_many.
]]
local tally, prefix = KEYS[1], ARGV[1]
must_exist(prefix)
local upto, budget, start = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local codes = {}
for i = 5, #ARGV do codes[#codes + 1] = ARGV[i] end
local cursor = tonumber(rcall('HGET', tally, 'minute')) or (start - 1)
if cursor >= upto then return cursor end

local sums = {}
local m = cursor + 1
while m <= upto and budget > 0 do
  local day = math.floor(m / 1440)
  local last = math.min(upto, day * 1440 + 1439)
  local key = prefix .. K.minute_stats .. day
  if rcall('EXISTS', key) == 1 then
    last = math.min(last, m + budget - 1)
    budget = budget - (last - m + 1)
    local fields = {}
    for minute = m, last do
      local of_day = minute % 1440
      for _, code in ipairs(codes) do fields[#fields + 1] = of_day .. ':' .. code end
    end
    local values = bulk_read('HMGET', key, fields)
    for i, v in ipairs(fields) do
      local n = tonumber(values[i])
      if n then
        local code = codes[(i - 1) % #codes + 1]
        sums[code] = (sums[code] or 0) + n
      end
    end
  end
  m = last + 1
end
hincr_many(tally, sums)
rcall('HSET', tally, 'minute', m - 1)
return m - 1
