-- _lib: helpers prepended to every script (not a script itself), after the generated prelude
-- (store::scripts::prelude: the queue names Q, DEFAULT_QUEUES, the counter codes ST).
-- Key names derived here all start with the project prefix (ARGV-supplied `t:{SLUG}:`),
-- so they live in the project's cluster slot. A script's header lists the ones it uses.

-- State of one call. The scripts are functions of one library (store::scripts::Library),
-- whose top-level locals live as long as the library: each function starts with begin(),
-- which takes redis.call (absent while the library loads) and resets what a call fills.
local rcall, clock, clock_ms, pending_stats
local function begin()
  rcall, clock, clock_ms, pending_stats = redis.call, nil, nil, {}
end
-- On the hot path, an integer goes to Redis or into a string as text made by
-- string.format('%d', n) (or as the ARGV text it came from), not as a Lua number: Redis 7.0
-- writes a number argument with "%.17g", Lua's `..` and tostring with "%.14g", and C's float
-- formatting costs about ten times an integer's (callgrind: ~3,300 instructions a number).

-- `f`, a function of one argument whose answer depends on that argument alone, with its
-- answers remembered: the library's top-level values live as long as the library, across
-- calls, so a call finds what an earlier one worked out (up to `limit` different arguments,
-- then all are forgotten at once). An answer that is a table is shared: never change it.
local function remembered(f, limit)
  local seen, n = {}, 0
  return function(x)
    local y = seen[x]
    if y == nil then
      if n >= limit then seen, n = {}, 0 end
      y = f(x)
      seen[x], n = y, n + 1
    end
    return y
  end
end

-- The decimal text of integers 0 to 64 (counts of a batch), made once: string.format per use
-- costs ten times a table read.
local INT_TEXTS = {}
for n = 0, 64 do INT_TEXTS[n] = n .. '' end
local function int_text(n)
  return INT_TEXTS[n] or string.format('%d', n)
end
-- The integer of decimal text `t` (a count in ARGV or a reply): a table read for 0 to 64, where
-- tonumber would run C's strtod (about 1,000 instructions).
local INT_OF = {}
for n = 0, 64 do INT_OF[INT_TEXTS[n]] = n end
local function int_of(t)
  return INT_OF[t] or tonumber(t)
end

-- The queue groups in claim order: { {'todo', 'todo#img'}, {'todo:backfeed'}, ... }.
-- Within a group, parts share the group's turn; a part `Q#name` is rate limited by `name`.
-- Remembered (see `remembered`): a caller never changes the tables it gets.
local parse_groups = remembered(function(order)
  local groups = {}
  for group in string.gmatch(order, '[^,]+') do
    if string.find(group, '%s') then
      local parts = {}
      for part in string.gmatch(group, '%S+') do parts[#parts + 1] = part end
      groups[#groups + 1] = parts
    else
      groups[#groups + 1] = { group }   -- one part, most groups: no second gmatch
    end
  end
  return groups
end, 64)
local function queue_groups(order)
  return parse_groups(order or DEFAULT_QUEUES)
end

-- The sizes of the queue parts of claim order `order` (meta `queues`; nil: the default): their
-- total, and each part's in claim order, { {part = name, size = n}, ... }.
local function queue_sizes(prefix, order)
  local total, sizes = 0, {}
  for _, parts in ipairs(queue_groups(order)) do
    for _, part in ipairs(parts) do
      local n = rcall('ZCARD', prefix .. part)
      total, sizes[#sizes + 1] = total + n, { part = part, size = n }
    end
  end
  return total, sizes
end

-- Which queue part (name, without prefix) holds `item`, or nil.
local function find_in_queues(prefix, groups, item, downloader)
  for _, parts in ipairs(groups) do
    for _, part in ipairs(parts) do
      if rcall('ZSCORE', prefix .. part, item) then return part end
    end
  end
  if downloader and downloader ~= '' then
    local personal = Q.personal .. downloader
    if rcall('ZSCORE', prefix .. personal, item) then return personal end
  end
  return nil
end

-- Scores for `n` items joining a queue part: a function giving the i-th item's score. Queues
-- are served lowest score first (ZRANGE + ZREMRANGEBYRANK), and both orders score on one
-- clock, milliseconds:
-- - FIFO: the next ticks at or after now (`qseq` holds the last one given), in arrival order;
-- - random: now plus a uniform draw over a day, so items queued within a day of each other are
--   served in random order (a bulk load is shuffled whole), and no item waits behind items
--   queued more than a day after it, however steady the inflow.
-- A mode switch leaves waiting items their scores. A released item goes back with score 0,
-- first in line in either mode.
local DAY_MS = 86400000
-- The clock of queue scores: Redis's own time (TIME), in ms, read once per script call.
local function queue_clock()
  if not clock then
    clock = rcall('TIME')
    clock_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    -- Redis before 7 seeds Lua's generator the same way for every script call.
    math.randomseed((tonumber(clock[1]) % 2000) * 1000000 + tonumber(clock[2]))
  end
  return clock_ms
end
-- A new value of meta's `stamp` (see project_settings), for a script that changes a field the
-- settings are read with: Redis's clock to the microsecond (the tracker writes 16 hex digits).
local function new_stamp()
  queue_clock()
  return clock[1] .. '.' .. clock[2]
end

-- The project's settings as claim and done use them, typed: read with one HMGET and parsed
-- (parse_settings), then kept across calls (the library's top-level values live as long as the
-- library) while meta's `stamp` is the one they were read with, for at most a second. Every
-- write of a setting or of a field that follows from them writes a new stamp in the same
-- command (store::projects::settings_stamp, new_stamp); the second bounds what a write without
-- one (a process of an older version during an upgrade, an edit by hand) goes unseen. A
-- project without a stamp (made before it) is read at every call. Kept for up to 256 projects,
-- then all forgotten at once. The table answered is shared: never change it.
local SETTINGS_READ = { SET.title, SET.state, SET.min_version, SET.rate, SET.burst, SET.claims_limit,
  SET.dl_max_claims, SET.reclaim_ttl, SET.max_attempts, SET.fifo, SET.ignore_global_blocks, SET.queues, SET.shuffled,
  SET.decay_factor, SET.decay_threshold, SET.require_token, SET.tags, SET.domains, SET.auto_block_ttl }
-- The HMGET reply `s` (SETTINGS_READ's order) as a table of typed settings; `exists` is false
-- for no project (no title). `parts_in_order`: the queue parts of the claim order (decay on).
local function parse_settings(s)
  local v = {}
  for i = 1, #SETTINGS_READ do v[SETTINGS_READ[i]] = s[i] end
  local num = function(name) return tonumber(v[name]) or 0 end
  local c = {
    exists = v[SET.title] and true or false,
    state = v[SET.state] or SET_DEFAULT.state, min_version = v[SET.min_version] or '',
    rate = num(SET.rate), burst = num(SET.burst), claims_limit = num(SET.claims_limit),
    dl_max = num(SET.dl_max_claims), reclaim_ttl = num(SET.reclaim_ttl) * 1000, max_attempts = num(SET.max_attempts),
    fifo = v[SET.fifo] == '1', ignore_global = v[SET.ignore_global_blocks] == '1',
    groups = queue_groups(v[SET.queues]), decay_factor = num(SET.decay_factor),
    decay_threshold = tonumber(v[SET.decay_threshold]) or SET_DEFAULT.decay_threshold,
    require_token = v[SET.require_token] == '1', project_tags = {}, any_tags = false, parts_in_order = {},
    domains = {}, ndomains = 0,
    block_ttl = (tonumber(v[SET.auto_block_ttl]) or SET_DEFAULT.auto_block_ttl) * 1000,
  }
  c.by_score = c.fifo or v[SET.shuffled] == '1'
  c.serving = c.state == 'active' or c.state == 'draining'
  c.decaying = c.decay_factor > 0 and c.decay_factor < 1
  for tag in string.gmatch(v[SET.tags] or '', '[^,]+') do c.project_tags[tag], c.any_tags = true, true end
  for _, parts in ipairs(c.decaying and c.groups or {}) do
    for _, part in ipairs(parts) do c.parts_in_order[part] = true end
  end
  for d in string.gmatch(v[SET.domains] or '', '[^,]+') do
    if not c.domains[d] then c.ndomains = c.ndomains + 1 end
    c.domains[d] = true
  end
  return c
end
-- A script writes into a project only while the project's `meta` hash exists: destroying a
-- project deletes `meta` first and then sweeps its other keys (Store::destroy_project), so a
-- write that would come after the sweep passed its key, and be left behind for a project made
-- again with the slug, is refused instead. The error reply `NOPROJECT ...` is
-- StoreError::NoProject in the tracker (nothing written: call it before the first write).
-- Changes the segment registry's version in hash `offload` (field gen) to one it never had:
-- above the last, and at least the microseconds of Redis's clock. Processes cache what is on
-- disk by gen, and adds check against it, so a gen must not come round again, not even after a
-- rollback or failover that lost the commit that first used it.
local function next_gen(offload)
  local t = rcall('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(rcall('HGET', offload, 'gen') or '0') or 0
  rcall('HSET', offload, 'gen', string.format('%d', math.max(last + 1, now)))
end

local function no_project()
  error({ err = 'NOPROJECT the project does not exist (destroyed)' })
end
local function must_exist(prefix)
  if rcall('EXISTS', prefix .. 'meta') == 0 then no_project() end
end
local settings_kept, settings_n = {}, 0
local function project_settings(meta, now)
  local stamp = rcall('HGET', meta, SET.stamp)
  local kept = stamp and settings_kept[meta]
  if kept and kept.stamp == stamp and now >= kept.at and now - kept.at < 1000 then return kept.c end
  local c = parse_settings(rcall('HMGET', meta, unpack(SETTINGS_READ)))
  if stamp then
    if not settings_kept[meta] then
      if settings_n >= 256 then settings_kept, settings_n = {}, 0 end
      settings_n = settings_n + 1
    end
    settings_kept[meta] = { stamp = stamp, at = now, c = c }
  end
  return c
end

local function queue_scorer(qseq, n, fifo)
  queue_clock()
  if fifo then
    local base = math.max(tonumber(rcall('GET', qseq)) or 0, clock_ms)
    rcall('SET', qseq, string.format('%d', base + n))
    return function(i) return base + i end
  end
  return function() return clock_ms + math.random() * DAY_MS end
end

-- The sum of the scores of sorted set `key` (the downloaders' items: `tracker check` and
-- `tracker migrate`), read a page of 1,000 at a time.
local function zset_sum(key)
  local sum, cursor = 0, '0'
  repeat
    local page = rcall('ZSCAN', key, cursor, 'COUNT', 1000)
    cursor = page[1]
    for i = 2, #page[2], 2 do sum = sum + tonumber(page[2][i]) end
  until cursor == '0'
  return sum
end

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
