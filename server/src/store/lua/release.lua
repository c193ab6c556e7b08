#!lua
--[[
  release: gives a claimed item back to `todo` (first in line), restoring the claimant's budget.
  Only the claimant from the IP it claimed from, or an admin, may release; a claim made by a
  pipeline (its record's `p`), only that pipeline (or an admin).

  KEYS[1]  out        zset  claimed items
  KEYS[2]  claims     hash  claim records
  KEYS[3]  dl:claims  hash  downloader -> items held
  KEYS[4]  timeline   hash  item -> transitions (the claim's line, then "released")
  KEYS[5]  todo       zset  main queue
  KEYS[6]  attempts   hash  item -> times claimed (the claim's count goes back here)

  ARGV[1]  now (ms)
  ARGV[2]  item
  ARGV[3]  who asks (downloader name, or the admin's name)
  ARGV[4]  1 when the caller is an admin, else 0
  ARGV[5]  the caller's IP (a claimant must call from the IP it claimed from)
  ARGV[6]  the caller's pipeline ('' = none)
  ARGV[7]  key prefix `ns:{SLUG}:` (for the per-minute counter `released`)

  Output: JSON. {} released; {"err":"not_claimed"} the item is not claimed;
  {"err":"not_claimant"} the caller is not the claimant (or calls from another IP);
  {"err":"other_pipeline","item":s} the claim is a pipeline's, and the caller is not it.
  Events: none.
  Uses: ST, decode_claim, timeline_line, leave_claim, stat, flush_stats.
]]
local out, claims, dl_claims, tl, todo, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now, item, who, admin, ip = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5]
local pipeline, prefix = ARGV[6] or '', ARGV[7]

if not rcall('ZSCORE', out, item) then return cjson.encode({ err = 'not_claimed' }) end
local claim = decode_claim(rcall('HGET', claims, item))
if not admin and claim.p and claim.p ~= pipeline then
  return cjson.encode({ err = 'other_pipeline', item = item })
end
if not admin and (claim.d ~= who or (claim.ip and claim.ip ~= ip)) then
  return cjson.encode({ err = 'not_claimant' })
end
if claim.d then rcall('HINCRBY', dl_claims, claim.d, -1) end
rcall('ZREM', out, item)
rcall('HDEL', claims, item)
rcall('ZADD', todo, 0, item)
leave_claim(tl, attempts, item, claim, timeline_line(now, 'released', who, ''))
stat(prefix, now, ST.released)
flush_stats(prefix, now)
return '{}'
