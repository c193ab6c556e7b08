#!lua flags=no-writes
--[[
  snapshot: reads a project's leaderboard state in one step, consistent with its event sequence.

  KEYS[1]  meta           hash    title, queues, state, banner
  KEYS[2]  stats          hash    done_items, done_bytes, pq
  KEYS[3]  out            zset    claimed items
  KEYS[4]  dl:items       zset    items per downloader
  KEYS[5]  dl:bytes       zset    bytes per downloader
  KEYS[6]  domain_bytes   hash    bytes per domain
  KEYS[7]  seq            string  event sequence number
  KEYS[8]  history        list    recent events, newest first
  KEYS[9]  failed         hash    failed items
  KEYS[10] dl:seen        hash    last completion per downloader (ms)
  KEYS[11] dl:version     hash    last version per downloader
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  how many downloaders to return (most items first; -1 for all, 0 for none)
  ARGV[3]  how many recent events to return

  Output: {title, seq, todo, out, done_items, done_bytes, {domain, bytes, ...},
           {downloader, items, bytes, last seen, version, ...}, {event JSON, ...}, failed,
           {queue part, size, ...}, state, banner, downloaders in all}
    -1  no such project
  Events: none.
]]
local meta, stats, out, dl_items, dl_bytes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local domain_bytes, seq_key, history, failed = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local dl_seen, dl_version = KEYS[10], KEYS[11]
local prefix, ndl, nrecent = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local m = rcall('HMGET', meta, 'title', 'queues', 'state', 'banner')
if not m[1] then return -1 end

local st = rcall('HMGET', stats, 'done_items', 'done_bytes', 'pq')
local todo = tonumber(st[3]) or 0
local sizes = { 'personal', todo }
for _, parts in ipairs(queue_groups(m[2])) do
  for _, part in ipairs(parts) do
    local n = rcall('ZCARD', prefix .. part)
    todo = todo + n
    sizes[#sizes + 1] = part
    sizes[#sizes + 1] = n
  end
end

local rows = {}
local top = ndl == 0 and {} or rcall('ZREVRANGE', dl_items, 0, ndl < 0 and -1 or ndl - 1, 'WITHSCORES')
if #top > 0 then
  local names = {}
  for i = 1, #top, 2 do names[#names + 1] = top[i] end
  local bytes = bulk_read('ZMSCORE', dl_bytes, names)
  local seen = bulk_read('HMGET', dl_seen, names)
  local version = bulk_read('HMGET', dl_version, names)
  for i, name in ipairs(names) do
    rows[#rows + 1] = name
    rows[#rows + 1] = top[2 * i]
    rows[#rows + 1] = bytes[i] or '0'
    rows[#rows + 1] = seen[i] or '0'
    rows[#rows + 1] = version[i] or ''
  end
end

local recent = nrecent > 0 and rcall('LRANGE', history, 0, nrecent - 1) or {}
return { m[1], rcall('GET', seq_key) or '0', todo, rcall('ZCARD', out), st[1] or '0', st[2] or '0',
  rcall('HGETALL', domain_bytes), rows, recent, rcall('HLEN', failed), sizes, m[3] or 'active', m[4] or '',
  rcall('ZCARD', dl_items) }
