#!lua
--[[
  release: gives claimed items back to `todo` (first in line), restoring the claimants' budgets:
  one item (the old body's `item`) or a list (today's seesaw releases what its item filter
  rejected). Per item, only the claimant from the IP it claimed from, or an admin, may release
  it; a claim made by a pipeline (its record's `p`), only that pipeline (or an admin). Every
  item is checked before the first write; the items that pass are released, the others left as
  they are.

  KEYS[1]  out        zset  claimed items
  KEYS[2]  claims     hash  claim records
  KEYS[3]  dl:claims  hash  downloader -> items held
  KEYS[4]  timeline   hash  item -> transitions (the claim's line, then "released")
  KEYS[5]  todo       zset  main queue
  KEYS[6]  attempts   hash  item -> times claimed (the claim's count goes back here)

  ARGV[1]  now (ms)
  ARGV[2]  who asks (downloader name, or the admin's name)
  ARGV[3]  1 when the caller is an admin, else 0
  ARGV[4]  the caller's IP (a claimant must call from the IP it claimed from)
  ARGV[5]  the caller's pipeline ('' = none)
  ARGV[6]  key prefix `ns:{SLUG}:` (for the per-minute counter `released`)
  ARGV[7 ..]  the items

  Output: JSON {"released": [item, ...], "refused": [{"item": item, "err": code}, ...]} (each
  list left out when empty), in the order given; a code is "not_claimed" (the item is not
  claimed), "not_claimant" (the caller is not the claimant, or calls from another IP) or
  "other_pipeline" (the claim is a pipeline's, and the caller is not it), as the refusals of
  other scripts spell them. An item named twice is answered once.
  Events: none.
  Uses: must_exist, ST, decode_claim, timeline_line, leave_claim, stat, flush_stats.
]]
local out, claims, dl_claims, tl, todo, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now, who, admin, ip = tonumber(ARGV[1]), ARGV[2], ARGV[3] == '1', ARGV[4]
local pipeline, prefix = ARGV[5] or '', ARGV[6]
must_exist(prefix)

-- Every check first.
local released, refused, passed, seen = {}, {}, {}, {}
for i = 7, #ARGV do
  local item = ARGV[i]
  if not seen[item] then
    seen[item] = true
    local record = rcall('HGET', claims, item)
    if not record or not rcall('ZSCORE', out, item) then
      refused[#refused + 1] = { item = item, err = 'not_claimed' }
    else
      local claim = decode_claim(record)
      if not admin and claim.p and claim.p ~= pipeline then
        refused[#refused + 1] = { item = item, err = 'other_pipeline' }
      elseif not admin and (claim.d ~= who or (claim.ip and claim.ip ~= ip)) then
        refused[#refused + 1] = { item = item, err = 'not_claimant' }
      else
        passed[#passed + 1] = { item, claim }
      end
    end
  end
end

-- Then the writes.
for _, p in ipairs(passed) do
  local item, claim = p[1], p[2]
  if claim.d then rcall('HINCRBY', dl_claims, claim.d, -1) end
  rcall('ZREM', out, item)
  rcall('HDEL', claims, item)
  rcall('ZADD', todo, 0, item)
  leave_claim(tl, attempts, item, claim, timeline_line(now, 'released', who, ''))
  released[#released + 1] = item
end
if #released > 0 then
  stat(prefix, now, ST.released, #released)
  flush_stats(prefix, now)
end
local answer = {}
if #released > 0 then answer.released = released end
if #refused > 0 then answer.refused = refused end
if next(answer) == nil then return '{}' end
return cjson.encode(answer)
