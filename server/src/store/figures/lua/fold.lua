#!lua
--[[
  fold: applies a run of completion log entries to the per-downloader figures, exactly once.
  `done.lua` records each counted report as one log entry and counts the entries not folded
  yet (stats `journal`, their items `journal_items`); the fold reads the entries after the last
  folded one (stats `folded`, a stream id), sums them per downloader (in the tracker, off
  Redis), and this script writes the sums, the events and moves `folded` on, all in one step.
  A run is refused whole when `folded` is not the run's start: another process folded those
  entries first. All of a run's entries are of one minute (the tracker ends a run at a new
  minute), so its rate windows, charts and unique contributors are the minute's, day's and
  month's of that minute. The run's events come whole from the tracker, made from what
  `fold_base.lua` read (the sequence number, the downloaders' totals before the run, the
  project's counts); the run is refused too when the sequence number or a downloader's totals
  are no longer what they were made from.

  KEYS[1]  stats         hash    folded, journal, journal_items, counts_from; done_items, pq,
                                 disk_todo
  KEYS[2]  dl:items      zset    items per downloader
  KEYS[3]  dl:bytes      zset    bytes per downloader
  KEYS[4]  dl:version    hash    last version per downloader
  KEYS[5]  dl:seen       hash    last completion per downloader (ms)
  KEYS[6]  seq           string  event sequence number
  KEYS[7]  history       list    recent events, newest first
  KEYS[8]  events        channel completion events (a shard channel: SPUBLISH)
  KEYS[9]  log           stream  completion log
  KEYS[10] u:month       hll     unique downloaders of the run's calendar month
  KEYS[11] tally         hash    lifetime counters; `minute`, the last minute tallied
  Derived (same slot): dlc:<downloader>, dlc_last, dw:<minute>, dwh:<hour>, u:dl:<day>,
  u:ip:<day>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  from: the id of the last entry folded before the run (stats `folded` must hold it)
  ARGV[3]  to: the id of the run's last entry
  ARGV[4]  the first id after `to` (unused: kept in place for the arguments after it)
  ARGV[5]  entries in the run
  ARGV[6]  items in the run
  ARGV[7]  the minute (ms / 60000) of the run's entries
  ARGV[8]  history length to keep
  ARGV[9]  unused (was the log length kept: the log is trimmed only once archived, by the
           offloader, so an archive directory that cannot be written loses no entry)
  ARGV[10] counts_from: stats `counts_from` as the run was read ('' none; else refused as stale)
  ARGV[11] the event sequence number the events were made from (`seq` must hold it)
  ARGV[12] D, then D x (downloader, items, bytes, last version, last completion ms, its items
           and bytes before the run, as the events were made from: dl:items and dl:bytes must
           hold them)
  then     P, then P x ip (the run's reporting addresses, distinct)
  then     E (the run's events), then T, then T x event (the last T of the E, JSON text,
           whole: numbered from ARGV[11] + 1 on, the last one ARGV[11] + E; T is at most
           keys::HISTORY_RUN_TAIL: only these join the history), then the E events joined by
           ',' (the message published: Lua's table.concat of them would cost more than the
           whole run's other writes)
  then     B, then B x (per-minute counter code, n): the run's done items, bytes, round trips
           (summed, and counted by bucket), added to the run's minute (`st:<day>`); of its
           entries from `counts_from` on only (the done scripts before it counted their own)

  Output: "folded", or "stale" (`folded` is not ARGV[2], `counts_from` not ARGV[10], `seq` not
  ARGV[11], or a downloader's totals not those given; nothing written).
  Events: one per entry, with the downloader's totals after it (`dl_items`, `dl_bytes`), the
  project's counts and its `seq`, published as one message on KEYS[8] joined by ',' (parse as
  `[` .. `]`); the run's last T pushed on KEYS[7].
  Uses: must_exist, K, bulk, bulk_read, hincr_many, stat, flush_stats.
]]
local stats, dl_items, dl_bytes, dl_version, dl_seen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local seq_key, history, events, log, month_uniques = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local tally = KEYS[11]
local prefix, from, to = ARGV[1], ARGV[2], ARGV[3]
must_exist(prefix)
local nentries, nitems, minute = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local history_len = tonumber(ARGV[8])
local day = math.floor(minute / 1440)

local cursor = rcall('HMGET', stats, 'folded', 'counts_from')
if cursor[1] ~= from or (cursor[2] or '') ~= ARGV[10] then return 'stale' end
local seq0 = tonumber(ARGV[11])
if (tonumber(rcall('GET', seq_key)) or 0) ~= seq0 then return 'stale' end

-- The run's downloaders (with their totals the events were made from), addresses and events.
local whos, sums, given_items, given_bytes = {}, {}, {}, {}
local a = 13
for d = 1, tonumber(ARGV[12]) do
  whos[d] = ARGV[a]
  sums[d] = { items = tonumber(ARGV[a + 1]), bytes = tonumber(ARGV[a + 2]), version = ARGV[a + 3], seen = ARGV[a + 4] }
  given_items[d], given_bytes[d] = tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  a = a + 7
end
local ips = {}
for p = 1, tonumber(ARGV[a]) do ips[p] = ARGV[a + p] end
a = a + tonumber(ARGV[a]) + 1
local nev, ntail = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
local ev_first = a + 2
a = ev_first + ntail + 1

-- Each downloader's totals before the run (as the events were made from), and after it: one
-- ZADD per table for all.
local base_items, base_bytes = bulk_read('ZMSCORE', dl_items, whos), bulk_read('ZMSCORE', dl_bytes, whos)
for d = 1, #whos do
  base_items[d], base_bytes[d] = tonumber(base_items[d]) or 0, tonumber(base_bytes[d]) or 0
  if base_items[d] ~= given_items[d] or base_bytes[d] ~= given_bytes[d] then return 'stale' end
end
local z_items, z_bytes, versions, seen, window = {}, {}, {}, {}, {}
for d, who in ipairs(whos) do
  local s = sums[d]
  z_items[#z_items + 1] = string.format('%d', base_items[d] + s.items)
  z_items[#z_items + 1] = who
  z_bytes[#z_bytes + 1] = string.format('%d', base_bytes[d] + s.bytes)
  z_bytes[#z_bytes + 1] = who
  versions[#versions + 1] = who
  versions[#versions + 1] = s.version
  seen[#seen + 1] = who
  seen[#seen + 1] = s.seen
  window[who .. ' i'] = s.items
  window[who .. ' b'] = s.bytes
end
bulk('ZADD', dl_items, z_items)
bulk('ZADD', dl_bytes, z_bytes)
bulk('HSET', dl_version, versions)
bulk('HSET', dl_seen, seen)

-- The rate windows: each downloader's items and bytes of this minute and hour.
local minute_key, hour_key = prefix .. K.dl_minute .. minute, prefix .. K.dl_hour .. math.floor(minute / 60)
hincr_many(minute_key, window)
hincr_many(hour_key, window)
rcall('EXPIRE', minute_key, 25 * 3600, 'NX')
rcall('EXPIRE', hour_key, 26 * 3600, 'NX')

-- The downloaders' chart points (`dlc:<who>`, "minute bytes"): a point per minute it was
-- active, its total at the end of that minute, written when it is next folded in a later
-- minute (its total before this run). `dlc_last` holds the minute of its last run; the reader
-- adds that minute's point from its current total.
local last, moved = bulk_read('HMGET', prefix .. K.dl_chart_last, whos), {}
for d, who in ipairs(whos) do
  local m = tonumber(last[d])
  if not m or m < minute then
    if m then rcall('RPUSH', prefix .. K.dl_chart .. who, string.format('%d %d', m, base_bytes[d])) end
    moved[#moved + 1] = who
    moved[#moved + 1] = minute
  end
end
bulk('HSET', prefix .. K.dl_chart_last, moved)

-- Unique contributors, per day (31 days) and per calendar month (400 days).
local function uniques(key, members, days)
  if #members == 0 then return end
  -- PFADD answers 1 when it creates the key: the expiry is set then (NX), not at every call.
  local changed = 0
  for i = 1, #members, 1000 do
    changed = changed + rcall('PFADD', key, unpack(members, i, math.min(i + 999, #members)))
  end
  if changed > 0 then rcall('EXPIRE', key, days * 86400, 'NX') end
end
uniques(prefix .. K.uniques_dl .. day, whos, 31)
uniques(prefix .. K.uniques_ip .. day, ips, 31)
uniques(month_uniques, whos, 400)

-- The events, as given (no string made here for them): the run's last ones to the history, all
-- published.
if nev > 0 then
  local ev_last = ev_first + ntail - 1
  rcall('SET', seq_key, string.format('%d', seq0 + nev))
  -- Trimmed to its length once it is 64 over, not at every call.
  local history_now = 0
  for i = ev_first, ev_last, 1000 do
    history_now = rcall('LPUSH', history, unpack(ARGV, i, math.min(i + 999, ev_last)))
  end
  if history_now > history_len + 64 then rcall('LTRIM', history, 0, history_len - 1) end
  rcall('SPUBLISH', events, ARGV[ev_last + 1])
end

-- The run's per-minute counters, counted in its minute (`a` is past the events). A minute the
-- tally has moved into the lifetime totals already (the run folded late: every process was
-- down past the tally's grace) gets them in the totals too, so that they still count there.
local tallied = tonumber(rcall('HGET', tally, 'minute'))
local late = {}
for b = 1, tonumber(ARGV[a]) do
  local code, n = ARGV[a + 2 * b - 1], ARGV[a + 2 * b]
  stat(prefix, 0, code, tonumber(n))
  if tallied and minute <= tallied then late[code] = n end
end
flush_stats(prefix, minute * 60000)
for code, n in pairs(late) do rcall('HINCRBY', tally, code, n) end

-- The run folded. The log is not trimmed here: only the offloader trims it, through the last
-- entry its archive file holds (offloader::archive), so no completion record leaves Redis
-- before it is on disk.
rcall('HSET', stats, 'folded', to)
rcall('HINCRBY', stats, 'journal', -nentries)
rcall('HINCRBY', stats, 'journal_items', -nitems)
return 'folded'
