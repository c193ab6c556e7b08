-- _lib: helpers prepended to every script (not a script itself).
-- Key names derived here all start with the project prefix (ARGV-supplied `t:{SLUG}:`),
-- so they live in the project's cluster slot.
local rcall = redis.call

local DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'

-- The queue groups in claim order: { {'todo', 'todo#img'}, {'todo:backfeed'}, ... }.
-- Within a group, parts share the group's turn; a part `Q#name` is rate limited by `name`.
local function queue_groups(order)
  local groups = {}
  for group in string.gmatch(order or DEFAULT_QUEUES, '[^,]+') do
    local parts = {}
    for part in string.gmatch(group, '%S+') do parts[#parts + 1] = part end
    groups[#groups + 1] = parts
  end
  return groups
end

-- Which queue part (name, without prefix) holds `item`, or nil.
local function find_in_queues(prefix, groups, item, downloader)
  for _, parts in ipairs(groups) do
    for _, part in ipairs(parts) do
      if rcall('ZSCORE', prefix .. part, item) then return part end
    end
  end
  if downloader and downloader ~= '' then
    local personal = 'todo:d:' .. downloader
    if rcall('ZSCORE', prefix .. personal, item) then return personal end
  end
  return nil
end

-- Per-minute counters, buffered during a script and written once by flush_stats.
local pending_stats = {}

-- Adds 1 (or `by`) to the per-minute counter `field` (written by flush_stats).
local function stat(prefix, now, field, by)
  pending_stats[field] = (pending_stats[field] or 0) + (by or 1)
end

-- Writes the buffered counters to the minute containing `now` (ms): `st:<day>` field
-- "<minute of day>:<counter>", kept 35 days.
local function flush_stats(prefix, now)
  local day = math.floor(now / 86400000)
  local minute = math.floor((now % 86400000) / 60000)
  local key = prefix .. 'st:' .. day
  local any = false
  for field, n in pairs(pending_stats) do
    if n ~= 0 then
      rcall('HINCRBY', key, minute .. ':' .. field, n)
      any = true
    end
  end
  if any then rcall('EXPIRE', key, 35 * 86400) end
  pending_stats = {}
end

-- Appends a transition to an item's timeline: lines "time event who version", the last 8 kept.
local function timeline(key, item, now, what, who, version)
  local entry = string.format('%d %s %s %s', now, what, who ~= '' and who or '-',
    version ~= '' and string.gsub(version or '', '%s', '_') or '-')
  local raw = rcall('HGET', key, item)
  local text = raw and (raw .. '\n' .. entry) or entry
  local _, lines = string.gsub(text, '\n', '')
  while lines >= 8 do
    text = string.sub(text, string.find(text, '\n', 1, true) + 1)
    lines = lines - 1
  end
  rcall('HSET', key, item, text)
end

-- Whether version `a` is lower than `b`, comparing their numbers piecewise (20240101.02 > 3).
local function version_lt(a, b)
  local x, y = {}, {}
  for n in string.gmatch(a, '%d+') do x[#x + 1] = tonumber(n) end
  for n in string.gmatch(b, '%d+') do y[#y + 1] = tonumber(n) end
  for i = 1, math.max(#x, #y) do
    local p, q = x[i] or 0, y[i] or 0
    if p ~= q then return p < q end
  end
  return false
end

-- GCRA limiter `name` (field of hash `key`) at `rate` per second with `burst`: how many of
-- `want` may go now, and if none, in how many ms one may. Charge with gcra_charge.
local function gcra_allow(key, name, rate, burst, want, now)
  if not rate or rate <= 0 then return want, 0 end
  local interval = 1000 / rate
  local tolerance = interval * math.max(burst or 0, 1)
  local tat = math.max(tonumber(rcall('HGET', key, name)) or now, now)
  local m = math.floor((now + tolerance - tat) / interval + 1e-9)
  if m <= 0 then return 0, math.ceil(tat + interval - tolerance - now) end
  return math.min(m, want), 0
end

local function gcra_charge(key, name, rate, used, now)
  if not rate or rate <= 0 or used <= 0 then return end
  local tat = math.max(tonumber(rcall('HGET', key, name)) or now, now)
  rcall('HSET', key, name, string.format('%.3f', tat + used * 1000 / rate))
end

-- Whether `value` is blocked in hash `key` at `now` (entries are JSON with `expires`, 0 = never).
local function blocked(key, value, now)
  local raw = rcall('HGET', key, value)
  if not raw then return false end
  local ok, entry = pcall(cjson.decode, raw)
  local expires = ok and tonumber(entry.expires) or 0
  return expires == 0 or expires > now
end
