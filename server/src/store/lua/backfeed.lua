--[[
  backfeed: queues records found by workers unless the project's Bloom filter has seen them.

  The filter is scalable: layers `bloom:<i>` of 512-bit blocks; a record sets k bits of one
  block per layer. When the newest layer holds its capacity, a new, larger and stricter layer
  is added (parameters from ARGV[5]), so the false-positive rate stays within the target.
  A record new to the filter is also checked against every state (it may have been added by
  other means) so that an item is never in two states.

  KEYS[1]  meta    hash    queues, state
  KEYS[2]  out     zset    claimed items
  KEYS[3]  done    set     completed items
  KEYS[4]  failed  hash    failed items
  KEYS[5]  bloom   hash    layers; n:<i>, cap:<i>, blocks:<i>, k:<i>
  KEYS[6]  qseq    string  queue sequence counter
  Derived (same slot): <prefix><queue part>, <prefix>bloom:<i>, <prefix>st:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  the queue: `todo:backfeed` or `todo:backfeed:<shard>`
  ARGV[4]  1 to skip the filter (skipbloom), else 0
  ARGV[5]  layer parameters "capacity blocks k" for layers 0, 1, ..., separated by ';'
  ARGV[6 ..] triples: hash (integer < 2^52 of the dedupe key), part suffix ('' or '#pattern'), item

  Output: {added, duplicates}; -1 when the project does not exist.
  Events: none.
]]
local meta, out, done, failed, bloom, qseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now, prefix, queue, skip = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4] == '1'

local m = rcall('HMGET', meta, 'title', 'queues')
if not m[1] then return -1 end
local order = m[2] or DEFAULT_QUEUES
-- A new shard joins the backfeed group of the claim order.
if not string.find(' ' .. string.gsub(order, ',', ' ') .. ' ', ' ' .. queue .. ' ', 1, true) then
  order = string.gsub(order, 'todo:backfeed', 'todo:backfeed ' .. queue, 1)
  rcall('HSET', meta, 'queues', order)
end
local groups = queue_groups(order)

local params = {}
for cap, blocks, k in string.gmatch(ARGV[5], '(%d+) (%d+) (%d+)') do
  params[#params + 1] = { cap = tonumber(cap), blocks = tonumber(blocks), k = tonumber(k) }
end
local layers = {}
local nlayers = tonumber(rcall('HGET', bloom, 'layers')) or 0
for i = 0, nlayers - 1 do
  local f = rcall('HMGET', bloom, 'n:' .. i, 'cap:' .. i, 'blocks:' .. i, 'k:' .. i)
  layers[#layers + 1] = { i = i, n = tonumber(f[1]), cap = tonumber(f[2]), blocks = tonumber(f[3]), k = tonumber(f[4]) }
end

local function add_layer()
  local i = #layers
  local p = params[math.min(i + 1, #params)]
  rcall('HSET', bloom, 'layers', i + 1, 'n:' .. i, 0, 'cap:' .. i, p.cap, 'blocks:' .. i, p.blocks, 'k:' .. i, p.k)
  -- Allocated at its full size once: grown by bit sets at random offsets, Redis would copy the
  -- string again at every megabyte.
  rcall('SETRANGE', prefix .. 'bloom:' .. i, p.blocks * 64 - 1, '\0')
  layers[#layers + 1] = { i = i, n = 0, cap = p.cap, blocks = p.blocks, k = p.k }
end

-- Bit offsets (within the block) and the block of hash h in layer l.
local function spot(h, l)
  local block = math.floor(h / 262144) % l.blocks
  local x = h % 512
  local y = math.floor(h / 512) % 512
  y = y - (y % 2) + 1
  return block, x, y
end

-- Hashes remembered by this call, whose bits may not be written yet.
local pending = {}

local function seen(h)
  if pending[h] then return true end
  for _, l in ipairs(layers) do
    local block, x, y = spot(h, l)
    local bytes = rcall('GETRANGE', prefix .. 'bloom:' .. l.i, block * 64, block * 64 + 63)
    local all = true
    for j = 0, l.k - 1 do
      local off = (x + j * y) % 512
      -- A bitmap shorter than the block reads as zeros.
      local byte = string.byte(bytes, bit.rshift(off, 3) + 1) or 0
      if bit.band(byte, bit.lshift(1, 7 - bit.band(off, 7))) == 0 then
        all = false
        break
      end
    end
    if all then return true end
  end
  return false
end

-- Bit sets not yet written, per layer: BITFIELD arguments.
local sets = {}

local function flush_sets()
  for i, args in pairs(sets) do
    args.n = nil
    bulk('BITFIELD', prefix .. 'bloom:' .. i, args, 4000)
  end
  sets = {}
end

local function remember(h)
  local l = layers[#layers]
  if not l or l.n >= l.cap then
    add_layer()
    l = layers[#layers]
  end
  local block, x, y = spot(h, l)
  local args = sets[l.i] or { n = 0 }
  sets[l.i] = args
  -- An explicit length: `#` is a binary search per append.
  local n, base = args.n, block * 512
  for j = 0, l.k - 1 do
    args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', base + (x + j * y) % 512, 1
    n = n + 4
  end
  args.n = n
  pending[h] = true
  l.n = l.n + 1
  l.added = (l.added or 0) + 1
end

-- 1. The filter: records it has seen are duplicates; the others are remembered.
local dups = 0
local candidates = {}
for i = 6, #ARGV, 3 do
  local h = tonumber(ARGV[i])
  if not skip and seen(h) then
    dups = dups + 1
  else
    if not skip then remember(h) end
    candidates[#candidates + 1] = i
  end
end
flush_sets()

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
local known = {}
local function mark(replies, list)
  local rest = {}
  for j, item in ipairs(list) do
    if replies[j] and replies[j] ~= 0 then known[item] = true else rest[#rest + 1] = item end
  end
  return rest
end
local rest = mark(bulk_read('ZMSCORE', out, items), items)
if #rest > 0 then rest = mark(bulk_read('SMISMEMBER', done, rest), rest) end
if #rest > 0 and rcall('EXISTS', failed) == 1 then rest = mark(bulk_read('HMGET', failed, rest), rest) end
local parts_checked = {}
local function check_part(part)
  if #rest > 0 and not parts_checked[part] then
    parts_checked[part] = true
    rest = mark(bulk_read('ZMSCORE', prefix .. part, rest), rest)
  end
end
for _, parts in ipairs(groups) do
  for _, part in ipairs(parts) do check_part(part) end
end
for _, i in ipairs(candidates) do check_part(queue .. ARGV[i + 1]) end

-- 3. The new items, queued in order of arrival.
local ntriples = (#ARGV - 5) / 3
local seq = rcall('INCRBY', qseq, ntriples) - ntriples
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
    table.insert(adds[part], seq + (i - 3) / 3)
    table.insert(adds[part], item)
    added = added + 1
  end
end
for part, args in pairs(adds) do bulk('ZADD', prefix .. part, args) end
for _, l in ipairs(layers) do
  if l.added then rcall('HINCRBY', bloom, 'n:' .. l.i, l.added) end
end
stat(prefix, now, 'bf', added)
stat(prefix, now, 'bd', dups)
flush_stats(prefix, now)
return { added, dups }
