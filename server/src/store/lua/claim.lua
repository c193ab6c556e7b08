--[[
  claim: hands out up to N items from the queues, in claim order, to one downloader.

  KEYS[1]  meta           hash  project settings (`state`)
  KEYS[2]  out            zset  claimed items by claim time (ms)
  KEYS[3]  claims         hash  item -> JSON claim record
  KEYS[4]  todo           set   queue, claimed first
  KEYS[5]  todo:backfeed  set   queue
  KEYS[6]  todo:secondary set   queue
  KEYS[7]  todo:redo      set   queue, claimed last

  ARGV[1]  now (ms since the epoch)
  ARGV[2]  downloader
  ARGV[3]  client IP
  ARGV[4]  user agent
  ARGV[5]  script version ('' when not sent)
  ARGV[6]  N, the most items to claim (>= 1)

  Output: array of claimed items, empty when there is nothing to give.
    -1  no such project
    -2  project is not active (paused, finished)
  Events: none.
]]
local rcall = redis.call
local meta, out, claims = KEYS[1], KEYS[2], KEYS[3]
local now, downloader, ip, ua, version = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local want = tonumber(ARGV[6])

local state = rcall('HGET', meta, 'state')
if not state then return -1 end
if state ~= 'active' then return -2 end

local got = {}
for q = 4, 7 do
  if #got >= want then break end
  local items = rcall('SPOP', KEYS[q], want - #got)
  for _, item in ipairs(items) do
    got[#got + 1] = item
  end
end

for _, item in ipairs(got) do
  rcall('ZADD', out, now, item)
  rcall('HSET', claims, item, cjson.encode({ d = downloader, ip = ip, t = tonumber(now), ua = ua, v = version, n = 1 }))
end
return got
