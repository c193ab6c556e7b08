#!lua flags=no-writes
--[[
  places: for `tracker check`, one atomic look at a project's states, so that an item moving
  between states while the check runs (the project serving) is never seen in two, nor in none.
  Three modes:
  - 'count': how many items each state holds, with the counters they are checked against;
  - 'places': for each given item, the states that hold it, and whether it has a claim record;
  - 'claims': every claim record tallied by downloader, against `dl:claims` (its time grows with
    the claimed set: the caller uses it for claimed sets up to a bound).

  KEYS[1]  out       zset  claimed items
  KEYS[2]  done      set   completed items
  KEYS[3]  failed    hash  failed items
  KEYS[4]  claims    hash  claim records
  KEYS[5]  stats     hash  known, done_items, disk_done, disk_todo, pq, journal_items,
                           import_done_gap, import_dl_gap (`tracker migrate`: import.lua)
  KEYS[6]  dl:items  zset  items per downloader
  KEYS[7]  dl:claims hash  downloader -> items it holds
  Derived (same slot): <prefix><queue part> (queue parts and personal queues, named in ARGV).

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2]  mode: 'count', 'places' or 'claims'
  ARGV[3]  Q, the number of queue parts named next
  ARGV[4 .. 3+Q]  the queue parts (names without the prefix), in the order of the answer
  ARGV[4+Q ..]    ('places') the items

  Output: JSON.
    count:  {"parts":[n per part],"out":n,"done":n,"failed":n,"claims":n,
             "known":n|null,"done_items":n,"disk_done":n,"disk_todo":n,"pq":n,"dl_items":n,
             "done_gap":n,"dl_gap":n}
            (dl_items: the sum of the per-downloader item totals, plus the items of the
            completion log entries not folded into them yet)
    places: an array of strings, one per item: the 1-based indexes of the states holding it,
            comma-joined, in the order parts 1..Q, out (Q+1), done (Q+2), failed (Q+3); then
            "|c" when the item has a claim record.
    claims: {"held":{downloader: n},"counted":{downloader: n (dl:claims)},
             "missing":[claimed items without a readable record, at most 1,000]}
  Events: none.
  Uses: zset_sum.
]]
local out, done, failed, claims, stats, dl_items = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local dl_claims = KEYS[7]
local prefix, mode, nparts = ARGV[1], ARGV[2], tonumber(ARGV[3])
local parts = {}
for i = 1, nparts do parts[i] = prefix .. ARGV[3 + i] end

if mode == 'count' then
  local cards = {}
  for i, key in ipairs(parts) do cards[i] = rcall('ZCARD', key) end
  local s = rcall('HMGET', stats, 'known', 'done_items', 'disk_done', 'disk_todo', 'pq', 'journal_items',
    'import_done_gap', 'import_dl_gap')
  local sum = (tonumber(s[6]) or 0) + zset_sum(dl_items)
  -- Built by hand: cjson prints an empty table as an object, and large integers in exponent form.
  local n = function(v) return string.format('%d', tonumber(v) or 0) end
  local list = {}
  for i, c in ipairs(cards) do list[i] = n(c) end
  return '{"parts":[' .. table.concat(list, ',') .. '],"out":' .. n(rcall('ZCARD', out))
    .. ',"done":' .. n(rcall('SCARD', done)) .. ',"failed":' .. n(rcall('HLEN', failed))
    .. ',"claims":' .. n(rcall('HLEN', claims)) .. ',"known":' .. (s[1] and n(s[1]) or 'null')
    .. ',"done_items":' .. n(s[2]) .. ',"disk_done":' .. n(s[3]) .. ',"disk_todo":' .. n(s[4])
    .. ',"pq":' .. n(s[5]) .. ',"dl_items":' .. n(sum) .. ',"done_gap":' .. n(s[7]) .. ',"dl_gap":' .. n(s[8]) .. '}'
end

if mode == 'claims' then
  -- Every claim, a page of the claimed set at a time by rank (the set cannot change during
  -- the script), tallied per downloader against `dl:claims`.
  local held, missing, total = {}, {}, rcall('ZCARD', out)
  for from = 0, total - 1, 1000 do
    local names = rcall('ZRANGE', out, from, from + 999)
    local records = rcall('HMGET', claims, unpack(names))
    for i, item in ipairs(names) do
      local ok, c = pcall(cjson.decode, records[i] or '')
      if records[i] and ok and type(c) == 'table' then
        local d = type(c.d) == 'string' and c.d or ''
        held[d] = (held[d] or 0) + 1
      elseif #missing < 1000 then
        missing[#missing + 1] = item
      end
    end
  end
  local counted, raw = {}, rcall('HGETALL', dl_claims)
  for i = 1, #raw, 2 do counted[raw[i]] = tonumber(raw[i + 1]) or 0 end
  return '{"held":' .. cjson.encode(held) .. ',"counted":' .. cjson.encode(counted) .. ',"missing":'
    .. (#missing > 0 and cjson.encode(missing) or '[]') .. '}'
end

local items = {}
for i = 4 + nparts, #ARGV do items[#items + 1] = ARGV[i] end
if #items == 0 then return '[]' end
local held = {}
for i = 1, #items do held[i] = {} end
local function mark(index, present)
  for i = 1, #items do
    if present[i] then held[i][#held[i] + 1] = index end
  end
end
local function zset(key)
  local scores, present = rcall('ZMSCORE', key, unpack(items)), {}
  for i = 1, #items do present[i] = scores[i] and true or false end
  return present
end
local function hash(key)
  local values, present = rcall('HMGET', key, unpack(items)), {}
  for i = 1, #items do present[i] = values[i] and true or false end
  return present
end
for i, key in ipairs(parts) do mark(i, zset(key)) end
mark(nparts + 1, zset(out))
local member, present = rcall('SMISMEMBER', done, unpack(items)), {}
for i = 1, #items do present[i] = member[i] == 1 end
mark(nparts + 2, present)
mark(nparts + 3, hash(failed))
local record = hash(claims)
local answer = {}
for i = 1, #items do
  answer[i] = table.concat(held[i], ',') .. (record[i] and '|c' or '')
end
return cjson.encode(answer)
