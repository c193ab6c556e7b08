#!lua
--[[
  move_items: moves waiting items from one queue part to another, keeping each item in exactly
  one queue; an item no longer in its source part is skipped. A moved item is scored as newly
  queued in its destination (_lib queue_scorer).

  KEYS[1]  qseq  string  last FIFO score given (ms)
  KEYS[2]  meta  hash    fifo
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2 ..]  triples: source part, destination part, item

  Output: number of items moved.
  Events: none.
  Uses: must_exist, queue_scorer, SET.
]]
local qseq, meta = KEYS[1], KEYS[2]
local prefix = ARGV[1]
must_exist(prefix)
local fifo = rcall('HGET', meta, SET.fifo) == '1'

local n = (#ARGV - 1) / 3
local score   -- the scorer (_lib queue_scorer), made at the first item moved
local moved = 0
for i = 2, #ARGV, 3 do
  local src, dst, item = prefix .. ARGV[i], prefix .. ARGV[i + 1], ARGV[i + 2]
  if src ~= dst and rcall('ZREM', src, item) == 1 then
    score = score or queue_scorer(qseq, n, fifo)
    moved = moved + 1
    rcall('ZADD', dst, score(moved), item)
  end
end
return moved
