#!lua flags=no-writes
--[[
  item_status: where an item is, who holds it, and (optionally) its timeline.

  KEYS[1]  meta      hash  queues
  KEYS[2]  out       zset  claimed items
  KEYS[3]  claims    hash  claim records
  KEYS[4]  done      set   completed items
  KEYS[5]  failed    hash  failed items
  KEYS[6]  timeline  hash  item -> transitions, lines "time event who version"
  KEYS[7]  decay     hash  item -> "score reclaims" (decay score, below 1)
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  item

  Output: JSON {"state":s,"detail":s,"timeline":s,"decay":s}; state is "out" (detail: the
  claim record JSON), "done", "failed" (detail: the reason JSON), "queued" (detail: the queue
  part), or "unknown"; the timeline as stored (lines "time event who version"), with a current
  claim's own line after it; decay "score reclaims", or "" for a score of 1.
  Events: none.
  Uses: queue_groups, find_in_queues, timeline_append, decode_claim, claim_line, SET.
]]
local meta, out, claims, done, failed, tl = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local scores = KEYS[7]
local prefix, item = ARGV[1], ARGV[2]
local stored = rcall('HGET', tl, item)
local decay = rcall('HGET', scores, item) or ''
local history = stored or ''
if rcall('ZSCORE', out, item) then
  -- A claim's own line is in its record until the item leaves the claim.
  local raw = rcall('HGET', claims, item) or '{}'
  local line = claim_line(decode_claim(raw))
  return cjson.encode({ state = 'out', detail = raw, timeline = line and timeline_append(stored, line) or history,
    decay = decay })
end
local function reply(state, detail)
  return cjson.encode({ state = state, detail = detail, timeline = history, decay = decay })
end
if rcall('SISMEMBER', done, item) == 1 then return reply('done', '') end
local reason = rcall('HGET', failed, item)
if reason then return reply('failed', reason) end
local part = find_in_queues(prefix, queue_groups(rcall('HGET', meta, SET.queues)), item, nil)
if part then return reply('queued', part) end
return reply('unknown', '')
