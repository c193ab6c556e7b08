-- _lib_items: the second part of the helpers every script starts with (after _lib.lua, in
-- this order: store::scripts::LIB): the count of items a project knows, counters, bulk reads
-- and writes, which items a project knows, timelines and claim records, versions, rate
-- limits and blocks.

-- Adds `n` (items that joined the project, or minus those that left it for good) to the count
-- of items it knows, stats `known`, which `tracker check` compares with the items found in a
-- state: only a script that really adds or drops items changes it, by what it really did.
-- A project from before the count was kept has no field until `tracker check --recount` sets
-- it; a delta must not start it from zero, so it is skipped there.
local function count_known(stats, n)
  if n ~= 0 and rcall('HEXISTS', stats, 'known') == 1 then rcall('HINCRBY', stats, 'known', n) end
end

-- Per-minute counters (pending_stats, see begin), buffered during a script and written
-- once by flush_stats.
-- Adds 1 (or `by`) to the per-minute counter `field`, a code of ST (written by flush_stats).
local function stat(prefix, now, field, by)
  pending_stats[field] = (pending_stats[field] or 0) + (by or 1)
end

-- Writes the buffered counters to the minute containing `now` (ms): `st:<day>` field
-- "<minute of day>:<counter>", kept 35 days.
local function flush_stats(prefix, now)
  if next(pending_stats) == nil then return end
  local day = math.floor(now / 86400000)
  local at = string.format('%d:', (now % 86400000) / 60000)
  local key = prefix .. K.minute_stats .. string.format('%d', day)
  -- The expiry is set when a field is new (so at the key's creation), not at every call.
  local new = false
  for field, n in pairs(pending_stats) do
    if n ~= 0 and rcall('HINCRBY', key, at .. field, int_text(n)) == n then new = true end
  end
  if new then rcall('EXPIRE', key, '3024000') end   -- 35 days
  pending_stats = {}
end

-- Runs `cmd key values...` over `list` in chunks: Lua's unpack is limited to a few thousand
-- values. `step` must be even for field/value lists.
local function bulk(cmd, key, list, step)
  step = step or 1000
  for i = 1, #list, step do
    rcall(cmd, key, unpack(list, i, math.min(i + step - 1, #list)))
  end
end

-- The replies of `cmd key members...` over `list` in chunks, concatenated (one per member;
-- false for a missing one).
local function bulk_read(cmd, key, list)
  local n = #list
  if n == 0 then return {} end
  if n <= 1000 then return rcall(cmd, key, unpack(list, 1, n)) end
  local all = {}
  for i = 1, #list, 1000 do
    local part = rcall(cmd, key, unpack(list, i, math.min(i + 999, #list)))
    for j = 1, #part do all[#all + 1] = part[j] end
  end
  return all
end

-- Which of `items` (a list of names) the project knows in any state: claimed (`out`), done,
-- failed, or waiting in one of `parts` (queue part names, under key `prefix .. part`, each read
-- once): a set of their indexes. A few variadic reads for the whole list, each asking only about
-- the items not found yet, and none of a key that does not exist (a fresh project's claimed, done
-- and failed, and most queue parts), not a read per item and state.
local function known_items(items, out, done, failed, prefix, parts)
  local known, rest = {}, {}
  for i = 1, #items do rest[i] = i end
  local function look(cmd, key)
    if #rest == 0 or rcall('EXISTS', key) == 0 then return end
    local names = {}
    for j, i in ipairs(rest) do names[j] = items[i] end
    local replies, unknown = bulk_read(cmd, key, names), {}
    for j, i in ipairs(rest) do
      -- A member's score or field (a string), or SMISMEMBER's 1; false or 0 for none.
      local v = replies[j]
      if v and v ~= 0 then known[i] = true else unknown[#unknown + 1] = i end
    end
    rest = unknown
  end
  look('ZMSCORE', out)
  look('SMISMEMBER', done)
  look('HMGET', failed)
  local looked = {}
  for _, part in ipairs(parts) do
    if not looked[part] then
      looked[part] = true
      look('ZMSCORE', prefix .. part)
    end
  end
  return known
end

-- Adds `deltas[field]` to each integer field of hash `key`, zero deltas skipped: a HINCRBY
-- each, which costs Redis less than one HMGET and one HSET of them all (callgrind, 8 and 64
-- fields, in a list or a table of a hash: ~6,500 against ~10,000 instructions a field).
local function hincr_many(key, deltas)
  for field, n in pairs(deltas) do
    if n ~= 0 then rcall('HINCRBY', key, field, string.format('%d', n)) end
  end
end

-- One timeline line: "time event who version"; `now` in ms, a number or its decimal text (a
-- script's ARGV, a claim record's time), joined with `..`: string.format of the four costs
-- Redis four times as much.
local clean_version = remembered(function(v)
  return string.find(v, '%s') and (string.gsub(v, '%s', '_')) or v
end, 256)
local function timeline_line(now, what, who, version)
  if not version or version == '' then
    version = '-'
  else
    version = clean_version(version)
  end
  if type(now) ~= 'string' then now = string.format('%d', now) end
  return now .. ' ' .. what .. ' ' .. ((who and who ~= '') and who or '-') .. ' ' .. version
end

-- `raw` (an item's timeline text, or false) with `line` (one or more lines) appended, the last
-- 8 lines kept. `line` alone is never more than 8 lines (a claim's, and up to three after it).
local function timeline_append(raw, line)
  if not raw then return line end
  local text = raw .. '\n' .. line
  -- Where each line break is (plain finds: a gsub would copy the text to count them); past 7
  -- breaks, the text after the 8th-last one.
  local breaks, at = {}, 0
  repeat
    at = string.find(text, '\n', at + 1, true)
    breaks[#breaks + 1] = at
  until not at
  if #breaks >= 8 then text = string.sub(text, breaks[#breaks - 7] + 1) end
  return text
end

-- Appends a transition to an item's timeline: lines "time event who version", the last 8 kept.
local function timeline(key, item, now, what, who, version)
  rcall('HSET', key, item, timeline_append(rcall('HGET', key, item), timeline_line(now, what, who, version)))
end

-- Appends `lines[i]` to the timeline of `items[i]` for all i, in two calls. Items are distinct.
local function timeline_many(key, items, lines)
  if #items == 0 then return end
  local old = bulk_read('HMGET', key, items)
  local fields = {}
  for i, item in ipairs(items) do
    fields[#fields + 1] = item
    fields[#fields + 1] = timeline_append(old[i], lines[i])
  end
  bulk('HSET', key, fields)
end

-- The decoded claim record `raw` {d, ip, t, ua, v, n, r, q}: a table, empty when missing or unreadable.
local function decode_claim(raw)
  local ok, claim = pcall(cjson.decode, raw or '')
  return (ok and type(claim) == 'table') and claim or {}
end

-- A claim's own timeline line ("claimed", or "reclaimed" when `r`), from its decoded record, or
-- nil for an empty record. While a claim lasts, its line lives only in the record (a claim
-- writes nothing to the timeline); the line joins the timeline when the item leaves the claim.
local function claim_line(claim)
  if not claim.t then return nil end
  return timeline_line(tonumber(claim.t) or 0, claim.r and 'reclaimed' or 'claimed', claim.d, claim.v)
end

-- `item` leaves its claim (decoded record `claim`) without being done: the claim's line, then
-- `line` (if any), join its timeline; and, when `attempts` is given, its claim count is kept
-- there for its next claim to read.
local function leave_claim(tl, attempts, item, claim, line)
  local lines = claim_line(claim)
  if line then lines = lines and (lines .. '\n' .. line) or line end
  if lines then rcall('HSET', tl, item, timeline_append(rcall('HGET', tl, item), lines)) end
  if attempts and tonumber(claim.n) then rcall('HSET', attempts, item, claim.n) end
end

-- Whether version `a` is lower than `b`, comparing their numbers piecewise (20240101.02 > 3).
local function compare_versions(a, b)
  local x, y = {}, {}
  for n in string.gmatch(a, '%d+') do x[#x + 1] = tonumber(n) end
  for n in string.gmatch(b, '%d+') do y[#y + 1] = tonumber(n) end
  for i = 1, math.max(#x, #y) do
    local p, q = x[i] or 0, y[i] or 0
    if p ~= q then return p < q end
  end
  return false
end
-- Its answers kept across calls (`remembered`), per `b` and then per `a`: claim asks it for each
-- request of a project with a minimum version (about 21,000 instructions a comparison, 1,700 a
-- kept answer; callgrind, bench/ab/lua_instr.py), up to 64 minimums of 1,024 versions each.
local lt_of = remembered(function(b)
  return remembered(function(a) return compare_versions(a, b) end, 1024)
end, 64)
local function version_lt(a, b)
  return lt_of(b)(a)
end

-- The rate limit's formula (GCRA), for every limiter: with the theoretical arrival time `tat`
-- (ms), `interval` ms between two at the rate and `tolerance` ms of burst, how many of `want`
-- may go at `now`, and if none, in how many ms one may. The caller moves `tat` on by
-- `interval` for each that goes.
local function gcra_room(tat, interval, tolerance, want, now)
  local m = math.floor((now + tolerance - tat) / interval + 1e-9)
  if m <= 0 then return 0, math.ceil(tat + interval - tolerance - now) end
  return math.min(m, want), 0
end

-- GCRA limiter `name` (field of hash `key`) at `rate` per second with `burst`: how many of
-- `want` may go now, and if none, in how many ms one may. Charge with gcra_charge.
local function gcra_allow(key, name, rate, burst, want, now)
  if not rate or rate <= 0 then return want, 0 end
  local interval = 1000 / rate
  local tat = math.max(tonumber(rcall('HGET', key, name)) or now, now)
  return gcra_room(tat, interval, interval * math.max(burst or 0, 1), want, now)
end

local function gcra_charge(key, name, rate, used, now)
  if not rate or rate <= 0 or used <= 0 then return end
  local tat = math.max(tonumber(rcall('HGET', key, name)) or now, now)
  rcall('HSET', key, name, string.format('%.3f', tat + used * 1000 / rate))
end

-- Whether a block entry (JSON with `expires`, 0 = never; or false for none) holds at `now`.
local function block_holds(raw, now)
  if not raw then return false end
  local ok, entry = pcall(cjson.decode, raw)
  local expires = ok and tonumber(entry.expires) or 0
  return expires == 0 or expires > now
end

-- Whether `value` is blocked in hash `key` at `now`.
local function blocked(key, value, now)
  return block_holds(rcall('HGET', key, value), now)
end
