#!lua
--[[
  fleet_flush: records what one process saw of the warrior API's downloaders over its last
  couple of seconds (crate::fleet), in one call: forgets those silent for longer than the
  silence (at most 5,000 a call), then stores each record, unless it is new and the fleet holds
  `cap` downloaders already (then it is left out, and counted as dropped). A downloader's last
  call only moves forward (ZADD GT), so processes flushing in any order agree.

  KEYS[1]  clients  hash  id -> JSON record (project, downloader, ip, user agent, versions)
  KEYS[2]  seen     zset  id -> last call (ms)

  ARGV[1]  the fleet prefix `ns:fleet:{api}:`: `p:<SLUG>` (zset, a project's downloaders by last
           call) and `n:<window>` (hash, id -> items done in that 10-second window) are
           derived from it, in the same slot
  ARGV[2]  now (ms)
  ARGV[3]  the silence (ms): a downloader not heard from for longer is forgotten
  ARGV[4]  cap: the most downloaders remembered
  ARGV[5]  JSON: arrays (id, slug, record JSON, last call (ms), items done); an id is `SLUG:HEX`

  Output: JSON {"stored":n,"dropped":n,"forgotten":n}.
  Events: none.
  Uses: none.
]]
local clients, seen = KEYS[1], KEYS[2]
local prefix, now, silence, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local records = cjson.decode(ARGV[5])

local SWEEP, CHUNK, WINDOW_MS, KEEP_MS = 5000, 500, 10000, 120000

-- Forget the silent ones, a chunk at a time (unpack has a limit on arguments).
local forgotten = 0
local stale = rcall('ZRANGEBYSCORE', seen, '-inf', '(' .. string.format('%d', now - silence), 'LIMIT', 0, SWEEP)
for i = 1, #stale, CHUNK do
  local part = {}
  for j = i, math.min(i + CHUNK - 1, #stale) do part[#part + 1] = stale[j] end
  rcall('HDEL', clients, unpack(part))
  rcall('ZREM', seen, unpack(part))
  for _, id in ipairs(part) do
    local slug = string.match(id, '^([^:]*):')
    if slug then rcall('ZREM', prefix .. 'p:' .. slug, id) end
  end
  forgotten = forgotten + #part
end

local count = rcall('ZCARD', seen)
local window = prefix .. 'n:' .. string.format('%d', math.floor(now / WINDOW_MS))
local stored, dropped, counted = 0, 0, false
for _, r in ipairs(records) do
  local id, slug, record, at, done = r[1], r[2], r[3], r[4], tonumber(r[5]) or 0
  local known = rcall('ZSCORE', seen, id)
  if not known and count >= cap then
    dropped = dropped + 1
  else
    if not known then count = count + 1 end
    rcall('HSET', clients, id, record)
    at = string.format('%d', at)
    rcall('ZADD', seen, 'GT', at, id)
    rcall('ZADD', prefix .. 'p:' .. slug, 'GT', at, id)
    if done > 0 then
      rcall('HINCRBY', window, id, string.format('%d', done))
      counted = true
    end
    stored = stored + 1
  end
end
if counted then rcall('PEXPIRE', window, KEEP_MS) end
return cjson.encode({ stored = stored, dropped = dropped, forgotten = forgotten })
