#!lua flags=no-writes
--[[
  fold_base: reads what a fold run's events are made from, before `fold.lua` writes the run:
  the event sequence number, the run's downloaders' totals before it, and the project's counts.
  The tracker formats the run's events whole from these; `fold.lua` checks the sequence number
  and the totals again before it writes, and refuses the run ('stale') if either moved.

  KEYS[1]  stats     hash    pq, disk_todo, done_items
  KEYS[2]  dl:items  zset    items per downloader
  KEYS[3]  dl:bytes  zset    bytes per downloader
  KEYS[4]  seq       string  event sequence number
  KEYS[5]  meta      hash    queues
  KEYS[6]  out       zset    claimed items
  KEYS[7]  failed    hash    failed items
  Derived (same slot): queue parts.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2..] the run's downloaders

  Output: JSON {"seq":s, "todo":n, "out":n, "done":s, "failed":n, "items":[s, ...],
  "bytes":[s, ...]} (per downloader of ARGV, in order; '0' for one with none yet). Numbers Redis
  keeps as text stay the decimal strings Redis gave: cjson would print those past 10^14 in
  exponent form.
  Events: none.
  Uses: queue_sizes, bulk_read, SET.
]]
local stats, dl_items, dl_bytes, seq_key, meta, out, failed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local prefix = ARGV[1]
local whos = {}
for i = 2, #ARGV do whos[#whos + 1] = ARGV[i] end

local w = rcall('HMGET', stats, 'pq', 'disk_todo', 'done_items')
local todo = (tonumber(w[1]) or 0) + (tonumber(w[2]) or 0) + queue_sizes(prefix, rcall('HGET', meta, SET.queues))
local items, bytes = bulk_read('ZMSCORE', dl_items, whos), bulk_read('ZMSCORE', dl_bytes, whos)
for d = 1, #whos do items[d], bytes[d] = items[d] or '0', bytes[d] or '0' end
return cjson.encode({ seq = rcall('GET', seq_key) or '0', todo = todo, out = rcall('ZCARD', out), done = w[3] or '0',
  failed = rcall('HLEN', failed), items = items, bytes = bytes })
