#!lua
--[[
  refill: brings a chunk of a queue segment's items back into their queue part, with the
  scores they left with, so the part serves them in the order it would have. A segment is
  brought back in file order over several calls; its `restored` count says how far, and the
  call must name that count, so a chunk is never brought back twice. Once all are back, the
  segment leaves the registry, noted with the time in segs:gone (the offloader deletes its
  file a minute after that, on this clock).

  KEYS[1]  offload:lease  string  the token of the process allowed to offload
  KEYS[2]  segs           hash    segment id -> JSON entry
  KEYS[3]  segs:restored  hash    segment id -> records of it back in Redis
  KEYS[4]  offload        hash    gen
  KEYS[5]  stats          hash    disk_todo
  KEYS[6]  the queue part zset
  KEYS[7]  segs:gone      hash    segment id -> when it left the registry (ms, this clock)

  ARGV[1]  lease token
  ARGV[2]  segment id
  ARGV[3]  records already back (as the caller read it)
  ARGV[4]  the segment's records
  ARGV[5 ..]  pairs item, score

  Output: JSON {"restored":n} (the segment's new count), or a refusal: {"err":"lease"},
  {"err":"stale","item":id} (the segment is gone or its count differs; nothing changed).
  Events: none.
  Uses: must_exist, bulk, next_gen.
]]
local lease, segs, restored, offload, stats, part, gone = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
must_exist(string.sub(stats, 1, -#'stats' - 1))   -- the project's prefix
local token, id, from, total = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if rcall('GET', lease) ~= token then return cjson.encode({ err = 'lease' }) end
if rcall('HEXISTS', segs, id) == 0 or (tonumber(rcall('HGET', restored, id)) or 0) ~= from then
  return cjson.encode({ err = 'stale', item = id })
end
local adds, n = {}, 0
for i = 5, #ARGV, 2 do
  adds[#adds + 1] = ARGV[i + 1]
  adds[#adds + 1] = ARGV[i]
  n = n + 1
end
bulk('ZADD', part, adds, 1000)
rcall('HINCRBY', stats, 'disk_todo', -n)
local now = from + n
if now >= total then
  rcall('HDEL', segs, id)
  rcall('HDEL', restored, id)
  local t = rcall('TIME')
  rcall('HSET', gone, id, string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
  next_gen(offload)
else
  rcall('HSET', restored, id, now)
end
return cjson.encode({ restored = now })
