#!lua
--[[
  import: `tracker migrate` puts a universal tracker's items and figures into a project, one
  page at a time, each page in one step. An item is only ever added where the project does not
  know it yet (any queue part, claimed, done or failed), so a page imported twice (a migration
  resumed) changes nothing the second time, and every item stays in exactly one state.
  Modes:
  - 'claims': items claimed in the old tracker, claimed here by the same downloader and IP at the
    same time (claim count 1, no user agent or version: the old tracker kept neither);
  - 'done': items done in the old tracker, done here (counted in `done_items`, not credited to
    anyone: the downloaders' totals come with 'figures');
  - 'figures': the project's totals as the old tracker showed them. `done_items` becomes the old
    `done_counter` where it is larger than the items found done (the old tracker's `done` set
    may have been trimmed): the difference is kept as `import_done_gap`. The downloaders' items
    may sum to another figure than that (the old counts had their own drifts): the difference is
    kept as `import_dl_gap`. `tracker check` counts both gaps. Run again, it sets the same.

  KEYS[1]  meta       hash    queues (the queue parts to look in)
  KEYS[2]  out        zset    claimed items
  KEYS[3]  claims     hash    claim records
  KEYS[4]  done       set     completed items
  KEYS[5]  failed     hash    failed items
  KEYS[6]  dl:claims  hash    downloader -> items it holds
  KEYS[7]  stats      hash    known, done_items, done_bytes, journal_items, import_done_gap,
                              import_dl_gap
  KEYS[8]  dl:items   zset    items per downloader
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  mode: 'claims', 'done' or 'figures'
  ARGV[3]  P, then P x a personal queue part to look in too (`todo:d:NAME`)
  then     'claims': quads (item, claim time ms, downloader, its claim record as claims write
           it: Store::import_claims)
           'done': items
           'figures': the old done_counter, the old byte total (sum of domain_bytes)

  Output: 'claims' and 'done': the number of items added (the others were known already);
          'figures': JSON {"done_items":"n","done_gap":"n","dl_gap":"n"}.
  Events: none.
  Uses: must_exist, queue_groups, count_known, known_items, zset_sum, bulk, hincr_many, SET.
]]
local meta, out, claims, done, failed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local dl_claims, stats, dl_items = KEYS[6], KEYS[7], KEYS[8]
local prefix, mode = ARGV[1], ARGV[2]
must_exist(prefix)
local npersonal = tonumber(ARGV[3])
local first = 4 + npersonal

if mode == 'figures' then
  local counter, bytes = tonumber(ARGV[first]), ARGV[first + 1]
  local s = rcall('HMGET', stats, 'done_items', 'import_done_gap', 'journal_items')
  local held = (tonumber(s[1]) or 0) - (tonumber(s[2]) or 0)
  local gap = math.max(0, counter - held)
  local sum = (tonumber(s[3]) or 0) + zset_sum(dl_items)
  local total = held + gap
  rcall('HSET', stats, 'done_items', string.format('%d', total), 'import_done_gap', string.format('%d', gap),
    'import_dl_gap', string.format('%d', total - sum), 'done_bytes', bytes)
  return string.format('{"done_items":"%d","done_gap":"%d","dl_gap":"%d"}', total, gap, total - sum)
end

local step = mode == 'claims' and 4 or 1
local items = {}
for i = first, #ARGV, step do items[#items + 1] = ARGV[i] end
if #items == 0 then return 0 end

-- Which are known: in any state, every queue part of the claim order and the personal ones.
local parts = {}
for _, group in ipairs(queue_groups(rcall('HGET', meta, SET.queues))) do
  for _, part in ipairs(group) do parts[#parts + 1] = part end
end
for p = 4, 3 + npersonal do parts[#parts + 1] = ARGV[p] end
local known = known_items(items, out, done, failed, prefix, parts)

local added, seen = {}, {}
for i, item in ipairs(items) do
  if not known[i] and not seen[item] and item ~= '' then
    seen[item] = true
    added[#added + 1] = i
  end
end
if #added == 0 then return 0 end

if mode == 'claims' then
  local w_out, w_claims, w_dl = {}, {}, {}
  for _, i in ipairs(added) do
    local at = first + (i - 1) * 4
    local item, t, who, record = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    w_out[#w_out + 1] = t
    w_out[#w_out + 1] = item
    w_claims[#w_claims + 1] = item
    w_claims[#w_claims + 1] = record
    w_dl[who] = (w_dl[who] or 0) + 1
  end
  bulk('ZADD', out, w_out)
  bulk('HSET', claims, w_claims)
  hincr_many(dl_claims, w_dl)
else
  local w_done = {}
  for _, i in ipairs(added) do w_done[#w_done + 1] = items[i] end
  bulk('SADD', done, w_done)
  rcall('HINCRBY', stats, 'done_items', #added)
end
count_known(stats, #added)
return #added
