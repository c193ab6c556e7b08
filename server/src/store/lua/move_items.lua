--[[
  move_items: moves waiting items from one queue part to another, keeping each item in exactly
  one queue; an item no longer in its source part is skipped.

  KEYS[1]  qseq  string  last queue sequence number
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2 ..]  triples: source part, destination part, item

  Output: number of items moved.
  Events: none.
]]
local qseq = KEYS[1]
local prefix = ARGV[1]

local n = (#ARGV - 1) / 3
local seq = rcall('INCRBY', qseq, n) - n
local moved = 0
for i = 2, #ARGV, 3 do
  local src, dst, item = prefix .. ARGV[i], prefix .. ARGV[i + 1], ARGV[i + 2]
  seq = seq + 1
  if src ~= dst and rcall('ZREM', src, item) == 1 then
    rcall('ZADD', dst, seq, item)
    moved = moved + 1
  end
end
return moved
