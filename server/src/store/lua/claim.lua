--[[
  claim: serves R claim requests of one project in one atomic step, each up to N items, in
  claim order: the downloader's own queue; reclaims when the claims limit is reached; the
  queue groups of meta `queues` (todo, todo:backfeed (+ shards), todo:secondary, todo:redo,
  each with its pattern-limited parts `Q#name`); reclaims of claims older than TTL x claims.
  Items claimed more than `max_attempts` times move to `failed` instead of being handed out.

  Checks per request, in PROTOCOL.md's order: version (455), name (400), blocked (403),
  state / per-downloader budget (404), rate limit (429), nothing to give (404).

  KEYS[1]  meta        hash  settings: state, min_version, rate, burst, claims_limit,
                             dl_max_claims, reclaim_ttl, max_attempts, fifo,
                             ignore_global_blocks, queues, pl:<name> ("rate burst")
  KEYS[2]  out         zset  claimed items by claim time (ms)
  KEYS[3]  claims      hash  item -> JSON claim record {d, ip, t, ua, v, n}
  KEYS[4]  attempts    hash  item -> times claimed
  KEYS[5]  failed      hash  item -> JSON {reason, t}
  KEYS[6]  dl:claims   hash  downloader -> items it holds
  KEYS[7]  blocked:ip  hash  ip -> JSON block entry
  KEYS[8]  blocked:dl  hash  downloader -> JSON block entry
  KEYS[9]  ratelimit   hash  limiter -> theoretical arrival time (ms); '' is the project's
  KEYS[10] timeline    hash  item -> transitions, lines "time event who version"
  KEYS[11] stats       hash  pq (items in personal queues)
  Derived (same slot): <prefix><queue part>, <prefix>todo:d:<downloader>, <prefix>st:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  R, the number of requests
  ARGV[4 + 7(r-1) ..]  per request: downloader, ip, user agent, version ('' = none),
                       N (>= 1), name_ok (1/0), globally_blocked (1/0)

  Output: -1 when there is no such project; else per request, flattened:
    code, count, items...   code 200 (count items follow), 455, 400, 403,
                            404 (count 1 = not active, 2 = budget, 3 = nothing to give),
                            429 (count = ms until an item may be claimed)
  Events: none.
]]
local meta, out, claims, attempts, failed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local dl_claims, blocked_ip, blocked_dl, ratelimit, tl = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local stats = KEYS[11]
local now, prefix, nreq = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

local s = rcall('HMGET', meta, 'title', 'state', 'min_version', 'rate', 'burst', 'claims_limit',
  'dl_max_claims', 'reclaim_ttl', 'max_attempts', 'fifo', 'ignore_global_blocks', 'queues')
if not s[1] then return -1 end
local state, min_version = s[2] or 'active', s[3] or ''
local rate, burst = tonumber(s[4]) or 0, tonumber(s[5]) or 0
local claims_limit, dl_max = tonumber(s[6]) or 0, tonumber(s[7]) or 0
local reclaim_ttl, max_attempts = (tonumber(s[8]) or 0) * 1000, tonumber(s[9]) or 0
local fifo, ignore_global = s[10] == '1', s[11] == '1'
local groups = queue_groups(s[12])

-- Hands `item` to the claimant; false (and the item goes to `failed`) when out of attempts.
local function take(item, who, from)
  local n = rcall('HINCRBY', attempts, item, 1)
  if max_attempts > 0 and n > max_attempts then
    rcall('HSET', failed, item, cjson.encode({ reason = 'claimed ' .. (n - 1) .. ' times', t = now }))
    rcall('HDEL', attempts, item)
    timeline(tl, item, now, 'failed', '', '')
    stat(prefix, now, 'f')
    return false
  end
  rcall('ZADD', out, now, item)
  rcall('HSET', claims, item, cjson.encode({ d = who.d, ip = who.ip, t = now, ua = who.ua, v = who.v, n = n }))
  rcall('HINCRBY', dl_claims, who.d, 1)
  timeline(tl, item, now, from, who.d, who.v)
  return true
end

-- Moves up to `want` claimed items to `who`: the oldest ones, or (ttl) those claimed longer
-- than ttl x their claim count ago.
local function reclaim(who, want, got, ttl)
  local candidates
  if ttl then
    candidates = rcall('ZRANGEBYSCORE', out, '-inf', now - ttl, 'LIMIT', 0, want * 4)
  else
    candidates = rcall('ZRANGE', out, 0, want - 1)
  end
  local n = 0
  for _, item in ipairs(candidates) do
    if n >= want then break end
    local raw = rcall('HGET', claims, item)
    local old = raw and cjson.decode(raw) or { t = 0, n = 1 }
    if not ttl or (tonumber(old.t) or 0) + ttl * (tonumber(old.n) or 1) <= now then
      if old.d then rcall('HINCRBY', dl_claims, old.d, -1) end
      rcall('ZREM', out, item)
      rcall('HDEL', claims, item)
      if take(item, who, 'reclaimed') then
        got[#got + 1] = item
        n = n + 1
      end
    end
  end
  if n > 0 then stat(prefix, now, 'rc', n) end
  return n
end

-- Pops up to `want` items from queue part `key`.
local function pop(key, want)
  if fifo then
    local flat = rcall('ZPOPMIN', key, want)
    local items = {}
    for i = 1, #flat, 2 do items[#items + 1] = flat[i] end
    return items
  end
  local items = rcall('ZRANDMEMBER', key, want)
  if #items > 0 then rcall('ZREM', key, unpack(items)) end
  return items
end

-- Claims up to `want` from one queue group: the parts share it in proportion to their sizes,
-- a limited part no more than its limiter allows.
local function from_group(parts, who, want, got)
  if #parts == 1 and not string.find(parts[1], '#', 1, true) then
    local n = 0
    for _, item in ipairs(pop(prefix .. parts[1], want)) do
      if take(item, who, 'claimed') then
        got[#got + 1] = item
        n = n + 1
      end
    end
    return n
  end
  local sizes, caps, total = {}, {}, 0
  for i, part in ipairs(parts) do
    local size = rcall('ZCARD', prefix .. part)
    local limiter = string.match(part, '#(.+)$')
    local cap = size
    if limiter and size > 0 then
      local conf = rcall('HGET', meta, 'pl:' .. limiter) or ''
      local prate, pburst = string.match(conf, '^(%S+) (%S+)$')
      cap = math.min(size, (gcra_allow(ratelimit, 'p:' .. limiter, tonumber(prate), tonumber(pburst), size, now)))
    end
    sizes[i], caps[i], total = size, cap, total + cap
  end
  if total == 0 then return 0 end
  local n = 0
  for i, part in ipairs(parts) do
    if n >= want then break end
    local share = math.min(caps[i], math.ceil(want * caps[i] / total))
    share = math.min(share, want - n)
    if share > 0 then
      local used = 0
      for _, item in ipairs(pop(prefix .. part, share)) do
        if take(item, who, 'claimed') then
          got[#got + 1] = item
          n, used = n + 1, used + 1
        end
      end
      local limiter = string.match(part, '#(.+)$')
      if limiter then
        local conf = rcall('HGET', meta, 'pl:' .. limiter) or ''
        gcra_charge(ratelimit, 'p:' .. limiter, tonumber(string.match(conf, '^(%S+)')), used, now)
      end
    end
  end
  return n
end

local result = {}
local function answer(code, extra, items)
  result[#result + 1] = code
  result[#result + 1] = extra
  for _, item in ipairs(items or {}) do result[#result + 1] = item end
end

for r = 0, nreq - 1 do
  local a = 4 + 7 * r
  local who = { d = ARGV[a], ip = ARGV[a + 1], ua = ARGV[a + 2], v = ARGV[a + 3] }
  local want = tonumber(ARGV[a + 4])
  stat(prefix, now, 'rq')
  if min_version ~= '' and (who.v == '' or version_lt(who.v, min_version)) then
    answer(455, 0)
  elseif ARGV[a + 5] ~= '1' then
    answer(400, 0)
  elseif (ARGV[a + 6] == '1' and not ignore_global) or blocked(blocked_ip, who.ip, now)
    or blocked(blocked_dl, who.d, now) then
    answer(403, 0)
  elseif state ~= 'active' and state ~= 'draining' then
    answer(404, 1)
  else
    local held = tonumber(rcall('HGET', dl_claims, who.d)) or 0
    if dl_max > 0 then want = math.min(want, dl_max - held) end
    if want <= 0 then
      answer(404, 2)
    else
      local allowed, retry = gcra_allow(ratelimit, '', rate, burst, want, now)
      if allowed == 0 then
        answer(429, retry)
      else
        local got, reclaimed = {}, 0
        -- 1. the downloader's own queue
        local personal = pop(prefix .. 'todo:d:' .. who.d, allowed)
        if #personal > 0 then rcall('HINCRBY', stats, 'pq', -#personal) end
        for _, item in ipairs(personal) do
          if take(item, who, 'claimed') then got[#got + 1] = item end
        end
        -- 2. reclaims when the claims limit is reached
        if #got < allowed and claims_limit > 0 and rcall('ZCARD', out) >= claims_limit then
          reclaimed = reclaimed + reclaim(who, allowed - #got, got, nil)
        end
        -- 3. the queues, in order
        for _, parts in ipairs(groups) do
          if #got >= allowed or (claims_limit > 0 and rcall('ZCARD', out) >= claims_limit) then break end
          local room = allowed - #got
          if claims_limit > 0 then room = math.min(room, claims_limit - rcall('ZCARD', out)) end
          from_group(parts, who, room, got)
        end
        -- 4. reclaims of claims that took too long
        if #got < allowed and reclaim_ttl > 0 then
          reclaimed = reclaimed + reclaim(who, allowed - #got, got, reclaim_ttl)
        end
        gcra_charge(ratelimit, '', rate, #got, now)
        if #got == 0 then
          answer(404, 3)
        else
          stat(prefix, now, 'ok')
          stat(prefix, now, 'cl', #got)
          if reclaimed > 0 then stat(prefix, now, 'rs') end
          answer(200, #got, got)
        end
      end
    end
  end
end
flush_stats(prefix, now)
return result
