--[[
  snapshot: reads a project's leaderboard state in one step, consistent with its event sequence.

  KEYS[1]  meta           hash    title, state
  KEYS[2]  stats          hash    done_items, done_bytes
  KEYS[3]  out            zset    claimed items
  KEYS[4]  dl:items       zset    items per downloader
  KEYS[5]  dl:bytes       zset    bytes per downloader
  KEYS[6]  domain_bytes   hash    bytes per domain
  KEYS[7]  seq            string  event sequence number
  KEYS[8]  history        list    recent events, newest first
  KEYS[9]  todo           set     queue
  KEYS[10] todo:backfeed  set     queue
  KEYS[11] todo:secondary set     queue
  KEYS[12] todo:redo      set     queue

  ARGV[1]  how many downloaders to return (most items first; -1 for all)
  ARGV[2]  how many recent events to return

  Output: {title, seq, todo, out, done_items, done_bytes, {domain, bytes, ...},
           {downloader, items, bytes, ...}, {event JSON, ...}}
    -1  no such project
  Events: none.
]]
local rcall = redis.call
local meta, stats, out, dl_items, dl_bytes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local domain_bytes, seq_key, history = KEYS[6], KEYS[7], KEYS[8]
local ndl, nrecent = tonumber(ARGV[1]), tonumber(ARGV[2])

local title = rcall('HGET', meta, 'title')
if not title then return -1 end

local todo = 0
for q = 9, 12 do todo = todo + rcall('SCARD', KEYS[q]) end
local done_stats = rcall('HMGET', stats, 'done_items', 'done_bytes')

local rows = {}
local top = rcall('ZREVRANGE', dl_items, 0, ndl < 0 and -1 or ndl - 1, 'WITHSCORES')
for i = 1, #top, 2 do
  rows[#rows + 1] = top[i]
  rows[#rows + 1] = top[i + 1]
  rows[#rows + 1] = rcall('ZSCORE', dl_bytes, top[i]) or '0'
end

local recent = nrecent > 0 and rcall('LRANGE', history, 0, nrecent - 1) or {}
return { title, rcall('GET', seq_key) or '0', todo, rcall('ZCARD', out), done_stats[1] or '0',
  done_stats[2] or '0', rcall('HGETALL', domain_bytes), rows, recent }
