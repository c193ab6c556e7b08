#!lua
--[[
  add_items: queues items the project does not know yet, each in its queue part.

  An item known anywhere (any queue part, claimed, done or failed) is skipped, so an item is
  always in exactly one state. Personal queues other than the target are not searched.
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
  Uses: Q, queue_groups, find_in_queues, queue_scorer, count_known.
]]
local meta, out, done, failed, stats, qseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local prefix, queue, counting = ARGV[1], ARGV[2], ARGV[3] == 'count'
if (rcall('HGET', KEYS[7], 'gen') or '0') ~= ARGV[4] then return -1 end
local m = rcall('HMGET', meta, 'queues', 'fifo')
local groups, fifo = queue_groups(m[1]), m[2] == '1'
local personal = string.sub(queue, 1, #Q.personal) == Q.personal

local npairs = (#ARGV - 4) / 2
local score   -- the scorer (_lib queue_scorer), made at the first item added
local added, seen = 0, {}
for i = 5, #ARGV, 2 do
  local part, item = queue .. ARGV[i], ARGV[i + 1]
  local known = seen[item] or rcall('ZSCORE', out, item) or rcall('SISMEMBER', done, item) == 1
    or rcall('HEXISTS', failed, item) == 1 or rcall('ZSCORE', prefix .. part, item)
    or find_in_queues(prefix, groups, item, nil)
  if not known then
    if counting then
      seen[item] = true
      added = added + 1
    else
      score = score or queue_scorer(qseq, npairs, fifo)
      added = added + rcall('ZADD', prefix .. part, score(added + 1), item)
    end
  end
end
if personal and added > 0 and not counting then rcall('HINCRBY', stats, 'pq', added) end
if not counting then count_known(stats, added) end
return added
