#!lua
--[[
  clear_queue: drops every waiting item of one queue (all its parts: pattern parts, backfeed
  shards); the items leave the project. With dry run, only counts them.

  KEYS[1]  meta   hash  queues (the queue parts, grouped by queue)
  KEYS[2]  stats  hash  known (items the project knows)
  KEYS[3]  decay  hash  item -> decay score; the dropped items' entries go with them
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  the queue, one of todo, todo:backfeed, todo:secondary, todo:redo
  ARGV[3]  1 for a dry run, else 0

  Output: number of items dropped (or that would be).
  Events: none.
  Uses: must_exist, queue_groups, count_known, bulk, bulk_read, SET.
]]
local meta, stats, decay = KEYS[1], KEYS[2], KEYS[3]
local prefix, queue, dry = ARGV[1], ARGV[2], ARGV[3] == '1'
must_exist(prefix)

local count = 0
local scored = (not dry and rcall('EXISTS', decay) == 1) and rcall('HKEYS', decay) or {}
for _, parts in ipairs(queue_groups(rcall('HGET', meta, SET.queues))) do
  if parts[1] == queue then
    for _, part in ipairs(parts) do
      count = count + rcall('ZCARD', prefix .. part)
      if not dry then
        -- Decay scores are kept only for items waiting or claimed: those of this part go.
        local gone, scores = {}, bulk_read('ZMSCORE', prefix .. part, scored)
        for i, item in ipairs(scored) do
          if scores[i] then gone[#gone + 1] = item end
        end
        bulk('HDEL', decay, gone)
        rcall('UNLINK', prefix .. part)
      end
    end
  end
end
if not dry then count_known(stats, -count) end
return count
