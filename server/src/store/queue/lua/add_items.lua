#!lua
--[[
  add_items: queues items the project does not know yet, each in its queue part.

  An item known anywhere (any queue part, claimed, done or failed) is skipped, so an item is
  always in exactly one state. Where the items are is read with a few variadic calls for the
  whole call, and each part's new items are written with one ZADD. Personal queues other than the target are not searched.
  Scores (see _lib queue_scorer): in FIFO projects, the order they were added; else a draw
  that shuffles them with the items queued within a day of them.

  KEYS[1]  meta    hash    queues (the queue parts to check), fifo
  KEYS[2]  out     zset    claimed items
  KEYS[3]  done    set     completed items
  KEYS[4]  failed  hash    failed items
  KEYS[5]  stats   hash    pq (items in personal queues), known (items the project knows)
  KEYS[6]  qseq    string  last FIFO score given (ms)
  KEYS[7]  offload hash    gen: the version of the project's segments on disk
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  the queue, e.g. `todo`, `todo:backfeed`, `todo:d:alice`
  ARGV[3]  `add`, or `count` (the dry run: counts what would be added, changes nothing)
  ARGV[4]  the segments' gen the caller checked the items against (items on disk were left out)
  ARGV[5 ..]  pairs: part suffix ('' or '#pattern'), item

  Output: number of items added (or that would be); -1 when the segments changed since the
  caller read them (an item may have moved between Redis and disk): nothing changed, check again.
  Events: none.
  Uses: must_exist, Q, queue_groups, queue_scorer, count_known, known_items, bulk, SET.
]]
local meta, out, done, failed, stats, qseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local prefix, queue, counting = ARGV[1], ARGV[2], ARGV[3] == 'count'
must_exist(prefix)
if (rcall('HGET', KEYS[7], 'gen') or '0') ~= ARGV[4] then return -1 end
local m = rcall('HMGET', meta, SET.queues, SET.fifo)
local groups, fifo = queue_groups(m[1]), m[2] == '1'
local personal = string.sub(queue, 1, #Q.personal) == Q.personal

-- The items and their target parts, in order.
local items, targets = {}, {}
for i = 5, #ARGV, 2 do
  items[#items + 1] = ARGV[i + 1]
  targets[#items] = queue .. ARGV[i]
end
-- Which are known: in any state, every queue part of the claim order and every target part.
local parts = {}
for _, group in ipairs(groups) do
  for _, part in ipairs(group) do parts[#parts + 1] = part end
end
for i = 1, #items do parts[#parts + 1] = targets[i] end
local known = known_items(items, out, done, failed, prefix, parts)

local score   -- the scorer (_lib queue_scorer), made at the first item added
local added, seen, writes = 0, {}, {}
for i, item in ipairs(items) do
  if not known[i] and not seen[item] then
    seen[item] = true
    added = added + 1
    if not counting then
      score = score or queue_scorer(qseq, #items, fifo)
      local w = writes[targets[i]] or {}
      w[#w + 1] = score(added)
      w[#w + 1] = item
      writes[targets[i]] = w
    end
  end
end
for part, w in pairs(writes) do bulk('ZADD', prefix .. part, w) end
if personal and added > 0 and not counting then rcall('HINCRBY', stats, 'pq', added) end
if not counting then count_known(stats, added) end
return added
