#!lua flags=allow-oom
--[[
  log_shed: the completion log's memory budget. The log leaves Redis only once archived (the
  offloader trims what its file holds); while archiving fails, it grows. Past `budget` entries,
  this drops its oldest ones, at most `step` a call, and counts them as lost (stats
  `log_lost`): a bounded Redis instead of one that fills and refuses every write. Only entries
  already folded go (the fold cursor, stats `folded`): the figures made from the log are never
  short of one. Allowed when Redis is full (allow-oom): what it drops frees memory.

  KEYS[1]  log    stream  completion log
  KEYS[2]  stats  hash    folded (the last entry folded), log_lost (entries dropped unarchived)

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  budget: entries the log may hold
  ARGV[3]  step: most entries dropped by one call

  Output: the number of entries dropped (0: within the budget, or none folded to drop).
  Uses: must_exist.
]]
local log, stats = KEYS[1], KEYS[2]
must_exist(ARGV[1])
local budget, step = tonumber(ARGV[2]), tonumber(ARGV[3])
local over = rcall('XLEN', log) - budget
if over <= 0 then return 0 end
local folded = rcall('HGET', stats, 'folded')
if not folded then return 0 end
-- Stream ids "ms-seq", compared as numbers.
local function id_parts(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local fms, fseq = id_parts(folded)
if not fms then return 0 end
local page = rcall('XRANGE', log, '-', '+', 'COUNT', math.min(over, step))
local last
for _, entry in ipairs(page) do
  local ms, seq = id_parts(entry[1])
  if ms > fms or (ms == fms and seq > fseq) then break end
  last = { ms, seq }
end
if not last then return 0 end
-- MINID drops the entries below it: the one after `last`.
local n = rcall('XTRIM', log, 'MINID', string.format('%d-%d', last[1], last[2] + 1))
if n > 0 then rcall('HINCRBY', stats, 'log_lost', n) end
return n
