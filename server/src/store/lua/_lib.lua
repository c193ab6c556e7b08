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
