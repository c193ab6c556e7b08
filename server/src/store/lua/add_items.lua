--[[
  add_items: queues items that the project does not know yet.

  An item known anywhere (any queue, claimed, done or failed) is skipped, so that an item is
  always in exactly one state.

  KEYS[1]  queue         set   the queue to add to
  KEYS[2]  out           zset  claimed items
  KEYS[3]  done          set   completed items
  KEYS[4]  failed        hash  failed items
  KEYS[5]  todo          set   queue (checked for duplicates)
  KEYS[6]  todo:backfeed set   queue (checked for duplicates)
  KEYS[7]  todo:secondary set  queue (checked for duplicates)
  KEYS[8]  todo:redo     set   queue (checked for duplicates)

  ARGV[1..n]  item names

  Output: number of items added.
  Events: none.
]]
local rcall = redis.call
local queue, out, done, failed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local added = 0
for i = 1, #ARGV do
  local item = ARGV[i]
  local known = rcall('ZSCORE', out, item) or rcall('SISMEMBER', done, item) == 1
    or rcall('HEXISTS', failed, item) == 1
  local q = 5
  while not known and q <= 8 do
    known = rcall('SISMEMBER', KEYS[q], item) == 1
    q = q + 1
  end
  if not known then
    added = added + rcall('SADD', queue, item)
  end
end
return added
