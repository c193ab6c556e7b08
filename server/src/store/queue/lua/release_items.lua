#!lua
--[[
  release_items: an admin gives claimed items back to their queue (first in line), each only if
  it is still the same claim (its claim time unchanged), restoring the claimants' budgets.

  KEYS[1]  out        zset  claimed items, scored by claim time (ms)
  KEYS[2]  claims     hash  claim records
  KEYS[3]  dl:claims  hash  downloader -> items held
  KEYS[4]  timeline   hash  item -> transitions (the claim's line, then "released")
  KEYS[5]  attempts   hash  item -> times claimed (the claim's count goes back here)
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  now (ms)
  ARGV[3]  the admin's name
  ARGV[4 ..]  triples: item, its claim time (ms) as seen, queue part to return it to (`todo#img`)

  Output: number of items released.
  Events: none.
  Uses: must_exist, ST, decode_claim, timeline_line, leave_claim, stat, flush_stats.
]]
local out, claims, dl_claims, tl, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local prefix, now, who = ARGV[1], tonumber(ARGV[2]), ARGV[3]
must_exist(prefix)

local released = 0
for i = 4, #ARGV, 3 do
  local item, seen, part = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local score = rcall('ZSCORE', out, item)
  if score and tonumber(score) == seen then
    local claim = decode_claim(rcall('HGET', claims, item))
    if claim.d then rcall('HINCRBY', dl_claims, claim.d, -1) end
    rcall('ZREM', out, item)
    rcall('HDEL', claims, item)
    rcall('ZADD', prefix .. part, 0, item)
    leave_claim(tl, attempts, item, claim, timeline_line(now, 'released', who, ''))
    released = released + 1
  end
end
stat(prefix, now, ST.released, released)
flush_stats(prefix, now)
return released
