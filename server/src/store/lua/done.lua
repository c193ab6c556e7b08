--[[
  done: marks claimed (or queued) items done, counts them once, and publishes one event.

  All items must be known to the project: if any is in no queue, not claimed and not done,
  nothing changes. Items already done are not counted again.

  KEYS[1]  out            zset    claimed items
  KEYS[2]  claims         hash    claim records
  KEYS[3]  done           set     completed items
  KEYS[4]  stats          hash    done_items, done_bytes
  KEYS[5]  dl:items       zset    items per downloader
  KEYS[6]  dl:bytes       zset    bytes per downloader
  KEYS[7]  dl:version     hash    last version per downloader
  KEYS[8]  dl:seen        hash    last completion time per downloader
  KEYS[9]  domain_bytes   hash    bytes per domain
  KEYS[10] seq            string  event sequence number
  KEYS[11] history        list    recent events, newest first
  KEYS[12] events         channel completion events
  KEYS[13] todo           set     queue
  KEYS[14] todo:backfeed  set     queue
  KEYS[15] todo:secondary set     queue
  KEYS[16] todo:redo      set     queue

  ARGV[1]  now (ms since the epoch)
  ARGV[2]  downloader
  ARGV[3]  script version
  ARGV[4]  user agent
  ARGV[5]  history length to keep
  ARGV[6]  D, the number of domains that follow
  ARGV[7 .. 6+2D]  domain, bytes (non-negative integer), alternating
  ARGV[7+2D ..]    items

  Output: {counted, duplicates, seq}; seq is 0 when nothing was counted.
    {-1, item}  the item is unknown to the project; nothing changed
  Events: publishes the event JSON on KEYS[12] and pushes it on KEYS[11] when anything is counted.
]]
local rcall = redis.call
local out, claims, done, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local dl_items, dl_bytes, dl_version, dl_seen = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local domain_bytes, seq_key, history, events = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local now, downloader, version, ua = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local history_len = tonumber(ARGV[5])
local ndomains = tonumber(ARGV[6])
local first_item = 7 + 2 * ndomains

-- Where is each item? 'out', a queue index, 'done', or nil when unknown. Checked before any write.
local where = {}
for i = first_item, #ARGV do
  local item = ARGV[i]
  local w
  if rcall('ZSCORE', out, item) then
    w = 'out'
  elseif rcall('SISMEMBER', done, item) == 1 then
    w = 'done'
  else
    for q = 13, 16 do
      if rcall('SISMEMBER', KEYS[q], item) == 1 then w = q break end
    end
  end
  if not w then return { -1, item } end
  where[i] = w
end

local fresh, dups = {}, 0
for i = first_item, #ARGV do
  local item, w = ARGV[i], where[i]
  if w == 'done' then
    dups = dups + 1
  else
    if w == 'out' then
      rcall('ZREM', out, item)
      rcall('HDEL', claims, item)
    else
      rcall('SREM', KEYS[w], item)
    end
    -- SADD returns 0 when the same item appears twice in one call: count it once.
    if rcall('SADD', done, item) == 1 then
      fresh[#fresh + 1] = item
    else
      dups = dups + 1
    end
  end
end
if #fresh == 0 then return { 0, dups, 0 } end

local total = 0
local domains_json = {}
for d = 0, ndomains - 1 do
  local domain, bytes = ARGV[7 + 2 * d], ARGV[8 + 2 * d]
  rcall('HINCRBY', domain_bytes, domain, bytes)
  total = total + tonumber(bytes)
  domains_json[#domains_json + 1] = cjson.encode(domain) .. ':' .. bytes
end
local total_s = string.format('%d', total)

rcall('HINCRBY', stats, 'done_items', #fresh)
rcall('HINCRBY', stats, 'done_bytes', total_s)
rcall('ZINCRBY', dl_items, #fresh, downloader)
rcall('ZINCRBY', dl_bytes, total_s, downloader)
rcall('HSET', dl_version, downloader, version)
rcall('HSET', dl_seen, downloader, now)

local todo = 0
for q = 13, 16 do todo = todo + rcall('SCARD', KEYS[q]) end
local seq = rcall('INCR', seq_key)
-- Built by hand: cjson would print large integers in exponent form.
local ev = '{"seq":' .. seq .. ',"time":' .. now .. ',"downloader":' .. cjson.encode(downloader)
  .. ',"items":' .. cjson.encode(fresh) .. ',"bytes":' .. total_s
  .. ',"domain_bytes":{' .. table.concat(domains_json, ',') .. '}'
  .. ',"version":' .. cjson.encode(version) .. ',"user_agent":' .. cjson.encode(ua)
  .. ',"counts":{"todo":' .. todo .. ',"out":' .. rcall('ZCARD', out)
  .. ',"done":' .. rcall('HGET', stats, 'done_items') .. '}}'
rcall('LPUSH', history, ev)
rcall('LTRIM', history, 0, history_len - 1)
rcall('PUBLISH', events, ev)
return { #fresh, dups, seq }
