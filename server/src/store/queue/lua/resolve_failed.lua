#!lua
--[[
  resolve_failed: an admin requeues failed items (first in line, attempts reset) or drops them
  (they leave the project); an item no longer failed is skipped.

  KEYS[1]  failed    hash  item -> JSON {reason, t}
  KEYS[2]  attempts  hash  item -> times claimed
  KEYS[3]  timeline  hash  item -> transitions
  KEYS[4]  stats     hash  known (items the project knows; dropped ones leave it)
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  now (ms)
  ARGV[3]  the admin's name
  ARGV[4]  `requeue` or `drop`
  ARGV[5 ..]  pairs: item, queue part to requeue it to (`todo`, `todo#img`)

  Output: number of items requeued or dropped.
  Events: none.
  Uses: must_exist, count_known, timeline.
]]
local failed, attempts, tl, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, now, who, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
must_exist(prefix)

local n, dropped = 0, 0
for i = 5, #ARGV, 2 do
  local item, part = ARGV[i], ARGV[i + 1]
  if rcall('HDEL', failed, item) == 1 then
    rcall('HDEL', attempts, item)
    if mode == 'requeue' then
      rcall('ZADD', prefix .. part, 0, item)
      timeline(tl, item, now, 'requeued', who, '')
    else
      rcall('HDEL', tl, item)
      dropped = dropped + 1
    end
    n = n + 1
  end
end
count_known(stats, -dropped)
return n
