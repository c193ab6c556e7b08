#!lua
--[[
  backfeed: queues records found by workers unless the project's Bloom filter has seen them.

  The filter is scalable: layers `filter:<i>` (hashes: block number -> 64 bytes, absent = zeros)
  of 512-bit blocks; a record sets k bits of one block of the newest layer. When the newest
  layer holds its capacity, a new, larger and stricter layer is added (parameters from ARGV[5]),
  so the false-positive rate stays within the target.

  The bit work is the tracker's (store/bloom.rs): it reads the blocks, decides which records
  are new, and sends each touched block of the newest layer with the value it read and the
  value to write. This script applies a block only if it still holds the value read (bits are
  only ever set, so a record whose bits were all set when read is a duplicate for good); the
  records of a block that changed meanwhile are handed back to be decided again. A record new
  to the filter is also checked against every state (it may have been added by other means) so
  that an item is never in two states.

  KEYS[1]  meta    hash    title, queues, fifo
  KEYS[2]  out     zset    claimed items
  KEYS[3]  done    set     completed items
  KEYS[4]  failed  hash    failed items
  KEYS[5]  filter  hash    layers; n:<i>, cap:<i>, blocks:<i>, k:<i>
  KEYS[6]  qseq    string  last FIFO score given (ms)
  KEYS[7]  stats   hash    known (items the project knows)
  KEYS[8]  offload hash    gen: the version of the project's segments on disk
  Derived (same slot): <prefix><queue part>, <prefix>filter:<i>, <prefix>st:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  the queue: `todo:backfeed` or `todo:backfeed:<shard>`
  ARGV[4]  1 to skip the filter (skipbloom), else 0
  ARGV[5]  layer parameters "capacity blocks k" for layers 0, 1, ..., separated by ';'
  ARGV[6]  the number of layers the tracker read (ignored when skipping)
  ARGV[7]  records the tracker already found in the filter (duplicates for good)
  ARGV[8]  B, the number of blocks of the newest layer that follow
  ARGV[9]  the segments' gen the tracker checked the records against (those on disk left out)
  ARGV[10 ..]  B triples: block number, value read ('' = absent), value to write
  then     quadruples per record: block (1..B, or 0 for none), 1 if new to the filter
           (0: a repeat within this call), part suffix ('' or '#pattern'), item

  Output: JSON. {"added":n,"duplicates":n,"again":[record numbers (1-based, in the order
  sent) to decide again]}; {"err":"filter_changed"} when the filter's layers changed (a layer
  may have been added), or the segments on disk did: read it again; {"err":"no_project"} when the project does not exist.
  Events: none.
  Uses: Q, DEFAULT_QUEUES, ST, K, queue_groups, queue_scorer, new_stamp, count_known, known_items, stat, flush_stats, bulk,
  bulk_read, SET.
]]
local meta, out, done, failed, bloom, qseq, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local now, prefix, queue, skip = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4] == '1'

local m = rcall('HMGET', meta, SET.title, SET.queues, SET.fifo)
if not m[1] then return cjson.encode({ err = 'no_project' }) end
-- Items moved between Redis and disk since the tracker checked: it checks again.
if (rcall('HGET', KEYS[8], 'gen') or '0') ~= ARGV[9] then return cjson.encode({ err = 'filter_changed' }) end
local order = m[2] or DEFAULT_QUEUES
-- A new shard joins the backfeed group of the claim order (written with the filter's changes).
local new_shard = not string.find(' ' .. string.gsub(order, ',', ' ') .. ' ', ' ' .. queue .. ' ', 1, true)
if new_shard then order = string.gsub(order, Q.backfeed, Q.backfeed .. ' ' .. queue, 1) end
local groups = queue_groups(order)

local params = {}
for cap, blocks, k in string.gmatch(ARGV[5], '(%d+) (%d+) (%d+)') do
  params[#params + 1] = { cap = tonumber(cap), blocks = tonumber(blocks), k = tonumber(k) }
end
local nblocks = tonumber(ARGV[8])
local first_record = 10 + 3 * nblocks
local dups = tonumber(ARGV[7])

-- 1. The filter: the blocks still as read are written, and their new records are candidates.
-- A filter that changed since the tracker read it is refused before anything is written; a
-- full newest layer gets a new one, the only write of such a call, and is read again.
local block_ok = {}
if not skip then
  local nlayers = tonumber(rcall('HGET', bloom, 'layers')) or 0
  if nlayers ~= tonumber(ARGV[6]) then return cjson.encode({ err = 'filter_changed' }) end
  local i = nlayers - 1
  local f = nlayers > 0 and rcall('HMGET', bloom, 'n:' .. i, 'cap:' .. i) or {}
  local n, cap = tonumber(f[1]) or 0, tonumber(f[2]) or 0
  local fresh = 0
  local fields = {}
  for b = 1, nblocks do fields[b] = ARGV[7 + 3 * b] end
  local current = nblocks > 0 and bulk_read('HMGET', prefix .. K.bloom_layer .. i, fields) or {}
  for b = 1, nblocks do block_ok[b] = (current[b] or '') == ARGV[8 + 3 * b] end
  for r = first_record, #ARGV, 4 do
    local b = tonumber(ARGV[r])
    if b > 0 and block_ok[b] and ARGV[r + 1] == '1' then fresh = fresh + 1 end
  end
  if nlayers == 0 or n >= cap or n + fresh > cap then
    -- The newest layer is full (or there is none): add one, and let the tracker read again.
    local p = params[math.min(nlayers + 1, #params)]
    rcall('HSET', bloom, 'layers', nlayers + 1, 'n:' .. nlayers, 0, 'cap:' .. nlayers, p.cap,
      'blocks:' .. nlayers, p.blocks, 'k:' .. nlayers, p.k)
    return cjson.encode({ err = 'filter_changed' })
  end
  local writes = {}
  for b = 1, nblocks do
    if block_ok[b] then
      writes[#writes + 1] = ARGV[7 + 3 * b]
      writes[#writes + 1] = ARGV[9 + 3 * b]
    end
  end
  bulk('HSET', prefix .. K.bloom_layer .. i, writes)
  if fresh > 0 then rcall('HINCRBY', bloom, 'n:' .. i, fresh) end
end

if new_shard then rcall('HSET', meta, SET.queues, order, SET.stamp, new_stamp()) end

-- Records of changed blocks go back; repeats within the call are duplicates; the rest are
-- candidates (`candidates` holds their ARGV positions).
local again, candidates = {}, {}
for r = first_record, #ARGV, 4 do
  local b = tonumber(ARGV[r])
  if not skip and b > 0 and not block_ok[b] then
    again[#again + 1] = (r - first_record) / 4 + 1
  elseif not skip and ARGV[r + 1] ~= '1' then
    dups = dups + 1
  else
    candidates[#candidates + 1] = r + 1
  end
end

-- 2. The exact check: a candidate whose item is in any state, or queued earlier in this call,
-- is a duplicate. One variadic read per table for all candidates.
local items, distinct = {}, {}
for _, i in ipairs(candidates) do
  local item = ARGV[i + 2]
  if not distinct[item] then
    distinct[item] = true
    items[#items + 1] = item
  end
end
-- Known in any state: every queue part of the claim order and every target part.
local parts = {}
for _, group in ipairs(groups) do
  for _, part in ipairs(group) do parts[#parts + 1] = part end
end
for _, i in ipairs(candidates) do parts[#parts + 1] = queue .. ARGV[i + 1] end
local known = {}
for i in pairs(known_items(items, out, done, failed, prefix, parts)) do known[items[i]] = true end

-- 3. The new items, scored by their queue part's rules (_lib queue_scorer), in order of arrival.
local adds = {}
local added = 0
for _, i in ipairs(candidates) do
  local item = ARGV[i + 2]
  if known[item] then
    dups = dups + 1
  else
    known[item] = true
    local part = queue .. ARGV[i + 1]
    adds[part] = adds[part] or {}
    table.insert(adds[part], item)
    added = added + 1
  end
end
local score = added > 0 and queue_scorer(qseq, added, m[3] == '1')
local scored = 0
for part, items in pairs(adds) do
  local args = {}
  for _, item in ipairs(items) do
    scored = scored + 1
    args[#args + 1] = score(scored)
    args[#args + 1] = item
  end
  bulk('ZADD', prefix .. part, args)
end
count_known(stats, added)
stat(prefix, now, ST.backfed, added)
stat(prefix, now, ST.backfeed_dups, dups)
flush_stats(prefix, now)
return cjson.encode({ added = added, duplicates = dups, again = again })
