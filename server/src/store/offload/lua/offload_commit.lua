#!lua flags=allow-oom
--[[
  offload_commit: items leave Redis for a segment file that is already written, fsynced and
  renamed (server/src/segment.rs): done items (and their timelines) for a `done` or `discard`
  segment, the last items of a queue part for a `queue` segment. The segment is registered and
  the items removed in one step, so an item is in Redis or in a registered segment, never both
  and never neither; a segment file that is not registered is an orphan the offloader deletes.

  KEYS[1]  offload:lease  string  the token of the process allowed to offload
  KEYS[2]  segs           hash    segment id -> JSON {kind, part, count, bytes, t, min, max}
  KEYS[3]  offload        hash    gen (a new one at every change of the segments: next_gen)
  KEYS[4]  stats          hash    disk_done (done items on disk), disk_todo (waiting on disk)
  KEYS[5]  done           set     completed items
  KEYS[6]  timeline       hash    item -> transitions
  KEYS[7]  the queue part zset    (kind `queue`; else any key of the project, unused)

  ARGV[1]  lease token
  ARGV[2]  segment id
  ARGV[3]  its registry entry (JSON)
  ARGV[4]  kind: `done`, `discard` or `queue`
  ARGV[5]  deadline (ms, Redis's clock: its TIME before the file was written, plus the commit
           window): later, the segment is refused, so an unregistered file older than the
           window can never become registered and the offloader's sweep may delete it
  ARGV[6 ..]  done, discard: the items; queue: pairs item, score (as read)

  Every item must still be where it was read (done; or in the part with the same score),
  else nothing changes. Runs past maxmemory (flags=allow-oom): it only frees memory.

  Output: JSON {"moved":n}, or a refusal: {"err":"lease"} (the caller does not hold the lease),
  {"err":"stale","item":s} (an item left its place since it was read, the segment is
  registered already, or the deadline passed: item is then the segment id; nothing changed).
  Events: none.
  Uses: must_exist, bulk, bulk_read, next_gen.
]]
local lease, segs, offload, stats, done, tl, part = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
must_exist(string.sub(stats, 1, -#'stats' - 1))   -- the project's prefix
local token, id, entry, kind = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if rcall('GET', lease) ~= token then return cjson.encode({ err = 'lease' }) end
if rcall('HEXISTS', segs, id) == 1 then return cjson.encode({ err = 'stale', item = id }) end
local clock = rcall('TIME')
if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > tonumber(ARGV[5]) then
  return cjson.encode({ err = 'stale', item = id })
end

local items, scores = {}, {}
if kind == 'queue' then
  for i = 6, #ARGV, 2 do
    items[#items + 1] = ARGV[i]
    scores[#scores + 1] = tonumber(ARGV[i + 1])
  end
  local now = bulk_read('ZMSCORE', part, items)
  for i, item in ipairs(items) do
    if tonumber(now[i]) ~= scores[i] then return cjson.encode({ err = 'stale', item = item }) end
  end
else
  for i = 6, #ARGV do items[#items + 1] = ARGV[i] end
  local there = bulk_read('SMISMEMBER', done, items)
  for i, item in ipairs(items) do
    if there[i] ~= 1 then return cjson.encode({ err = 'stale', item = item }) end
  end
end

if kind == 'queue' then
  bulk('ZREM', part, items)
  rcall('HINCRBY', stats, 'disk_todo', #items)
else
  bulk('SREM', done, items)
  if rcall('EXISTS', tl) == 1 then bulk('HDEL', tl, items) end
  rcall('HINCRBY', stats, 'disk_done', #items)
end
rcall('HSET', segs, id, entry)
next_gen(offload)
return cjson.encode({ moved = #items })
