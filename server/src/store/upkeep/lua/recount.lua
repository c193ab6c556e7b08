#!lua
--[[
  recount: sets a project's count of known items (stats `known`) to the number of items in a
  state now: every queue part of the claim order, the personal queues named, claimed, done and
  failed, and the items in segments on disk. For projects from before the count was kept, and after an operator has accepted a loss
  that `tracker check` reported; what was lost before cannot be seen afterwards. An item in two
  states is counted twice here (`tracker check` reports it as such).

  KEYS[1]  meta    hash    title, queues (the queue parts)
  KEYS[2]  out     zset    claimed items
  KEYS[3]  done    set     completed items
  KEYS[4]  failed  hash    failed items
  KEYS[5]  stats   hash    known (items the project knows), disk_done, disk_todo (on disk)
  Derived (same slot): <prefix><queue part>, <prefix>todo:d:<downloader>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2 ..]  personal queues, as key suffixes (`todo:d:alice`)

  Output: JSON {"before":n (absent when the count was not kept),"now":n};
  {"err":"no_project"} when the project does not exist.
  Events: none.
  Uses: queue_sizes, SET.
]]
local meta, out, done, failed, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local prefix = ARGV[1]

local m = rcall('HMGET', meta, SET.title, SET.queues)
if not m[1] then return cjson.encode({ err = 'no_project' }) end
local d = rcall('HMGET', stats, 'disk_done', 'disk_todo')
local n = rcall('ZCARD', out) + rcall('SCARD', done) + rcall('HLEN', failed) + (tonumber(d[1]) or 0)
  + (tonumber(d[2]) or 0)
n = n + queue_sizes(prefix, m[2])
for i = 2, #ARGV do n = n + rcall('ZCARD', prefix .. ARGV[i]) end
local before = tonumber(rcall('HGET', stats, 'known'))
rcall('HSET', stats, 'known', n)
return cjson.encode({ before = before, now = n })
