#!lua flags=no-writes
--[[
  snapshot: reads a project's leaderboard state in one step, consistent with its event sequence.

  KEYS[1]  meta           hash    title, queues, state, banner
  KEYS[2]  stats          hash    done_items, done_bytes, pq, disk_todo (waiting on disk)
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

  Output: JSON, {"err":"no_project"} when there is no such project, else
    {"title":s, "seq":n, "todo":n, "out":n, "done_items":n, "done_bytes":n, "failed":n,
     "state":s, "banner":s, "downloader_count":n (downloaders in all),
     "domain_bytes":{domain: bytes}, "downloaders":[{"name","items","bytes","seen","version"}],
     "recent":[event JSON text, newest first], "queues":[{"part","size"}] (in claim order,
     "personal" first: all personal queues); "todo" counts the items waiting on disk too}
  Numbers Redis keeps as text (seq, done_*, bytes, scores) stay the decimal strings Redis gave:
  cjson would print those past 10^14 in exponent form.
  Events: none.
  Uses: queue_sizes, bulk_read, SET, SET_DEFAULT.
]]
local meta, stats, out, dl_items, dl_bytes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local domain_bytes, seq_key, history, failed = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local dl_seen, dl_version = KEYS[10], KEYS[11]
local prefix, ndl, nrecent = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local m = rcall('HMGET', meta, SET.title, SET.queues, SET.state, SET.banner)
if not m[1] then return cjson.encode({ err = 'no_project' }) end

local st = rcall('HMGET', stats, 'done_items', 'done_bytes', 'pq', 'disk_todo')
local queued, part_sizes = queue_sizes(prefix, m[2])
local todo = (tonumber(st[3]) or 0) + (tonumber(st[4]) or 0) + queued
local sizes = { { part = 'personal', size = tonumber(st[3]) or 0 } }
for _, s in ipairs(part_sizes) do sizes[#sizes + 1] = s end

local rows = {}
local top = ndl == 0 and {} or rcall('ZREVRANGE', dl_items, 0, ndl < 0 and -1 or ndl - 1, 'WITHSCORES')
if #top > 0 then
  local names = {}
  for i = 1, #top, 2 do names[#names + 1] = top[i] end
  local bytes = bulk_read('ZMSCORE', dl_bytes, names)
  local seen = bulk_read('HMGET', dl_seen, names)
  local version = bulk_read('HMGET', dl_version, names)
  for i, name in ipairs(names) do
    rows[#rows + 1] = { name = name, items = top[2 * i], bytes = bytes[i] or '0', seen = seen[i] or '0',
      version = version[i] or '' }
  end
end

local recent = nrecent > 0 and rcall('LRANGE', history, 0, nrecent - 1) or {}
local domains = {}
local flat = rcall('HGETALL', domain_bytes)
for i = 1, #flat, 2 do domains[flat[i]] = flat[i + 1] end
return cjson.encode({ title = m[1], seq = rcall('GET', seq_key) or '0', todo = todo, out = rcall('ZCARD', out),
  done_items = st[1] or '0', done_bytes = st[2] or '0', failed = rcall('HLEN', failed), state = m[3] or SET_DEFAULT.state,
  banner = m[4] or '', downloader_count = rcall('ZCARD', dl_items), domain_bytes = domains, downloaders = rows,
  recent = recent, queues = sizes })
