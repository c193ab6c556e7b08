#!lua
--[[
  retire_shards: forgets the backfeed shard queues that hold nothing, so that a project fed a
  new shard name every day (urls-grab's `periodic<YEAR><DAY>`) stays within its cap of shard
  queues. A shard part is retired only when it is empty in Redis, no segment on disk belongs to
  it, and the project does not declare the shard; a later backfeed of the same name makes it
  again.

  KEYS[1]  meta  hash  queues (the queue parts, grouped by queue)
  KEYS[2]  segs  hash  segment id -> JSON entry with `kind` and `part`
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2 ..]  the shards the project declares (kept even when empty)

  Output: JSON {"retired":[the parts retired]}.
  Events: none.
  Uses: must_exist, Q, queue_groups, new_stamp, SET.
]]
local meta, segs = KEYS[1], KEYS[2]
local prefix = ARGV[1]
must_exist(prefix)
local order = rcall('HGET', meta, SET.queues)
if not order then return cjson.encode({ retired = {} }) end
local declared = {}
for i = 2, #ARGV do declared[Q.backfeed .. ':' .. ARGV[i]] = true end
local on_disk = {}
for _, raw in ipairs(rcall('HVALS', segs)) do
  local ok, entry = pcall(cjson.decode, raw)
  if ok and type(entry) == 'table' and entry.part then on_disk[entry.part] = true end
end
local retired, groups = {}, {}
for _, parts in ipairs(queue_groups(order)) do
  local kept = {}
  for _, part in ipairs(parts) do
    local shard = string.match(part, '^([^#]+)')
    local retire = string.sub(part, 1, #Q.backfeed + 1) == Q.backfeed .. ':'
      and not declared[shard] and not on_disk[part]
      and rcall('ZCARD', prefix .. part) == 0
    if retire then retired[#retired + 1] = part else kept[#kept + 1] = part end
  end
  if #kept > 0 then groups[#groups + 1] = table.concat(kept, ' ') end
end
if #retired > 0 then rcall('HSET', meta, SET.queues, table.concat(groups, ','), SET.stamp, new_stamp()) end
return cjson.encode({ retired = retired })
