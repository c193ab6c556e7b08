#!lua
--[[
  claim: serves R claim requests of one project in one atomic step, each up to N items, in
  claim order: the downloader's own queue; reclaims when the claims limit is reached; the
  queue groups of meta `queues` (todo, todo:backfeed (+ shards), todo:secondary, todo:redo,
  each with its pattern-limited parts `Q#name`); reclaims of claims older than TTL x claims.
  Within a queue part, items go lowest score first (ZRANGE + ZREMRANGEBYRANK): in FIFO projects
  the scores are the order of arrival, in the others a shuffle drawn when the item was queued
  (see _lib queue_scorer), which makes random order one call per batch. Projects created before
  queues were scored so (meta `shuffled` unset) draw at random from the part instead.
  Items claimed more than `max_attempts` times move to `failed` instead of being handed out.

  Score decay (meta `decay_factor` above 0), an alternative or a companion to `max_attempts`:
  an item's score starts at 1 (nothing stored); each reclaim (an expired claim, or the oldest
  claims when the claims limit is reached) multiplies it by the factor. Below
  `decay_threshold` the item moves to `failed` (the reason names its score and its reclaims).
  Otherwise it is not handed straight out: it goes back into the queue part it was claimed
  from (the record's `q`; `todo` for a personal queue's item, or a part no longer in the claim
  order) with the queue score now (the queue clock, _lib queue_clock) + one day x
  (1 - score) / score (capped at ten years), plus
  one day in shuffled queues: as if queued that much later, so it waits behind fresher work in
  proportion to its decay (6 h at 0.8, a day at 0.5, 199 days at 0.005), and is still served
  once nothing fresher waits. Expired claims are taken back before the queues are served (at
  most as many as the batch wants), so such an item may be served again in the same call if it
  is the lowest score left. Its timeline gets a line `decayed:SCORE`.

  Checks per request, in PROTOCOL.md's order: version, name, blocked, pipeline token (required,
  and tags: store::may_serve decides the same), state, per-downloader budget, rate limit,
  nothing to give (the refusals below).
  The batch is served in three phases so that Redis sees a few variadic calls per batch, not
  several calls per item: checks (one HMGET per table for all requests, the rate limiter kept
  in a local), then items popped for all requests at once and handed out in request order,
  then every claim written at once.

  KEYS[1]  meta        hash  settings: state, min_version, rate, burst, claims_limit,
                             dl_max_claims, reclaim_ttl, max_attempts, fifo,
                             ignore_global_blocks, queues, pl:<name> ("rate burst"),
                             shuffled (1: random order is in the queues' scores),
                             decay_factor, decay_threshold, require_token (1: claims need
                             a pipeline), tags (comma-joined); stamp (kept across calls
                             while it holds: _lib project_settings)
  KEYS[2]  out         zset  claimed items by claim time (ms)
  KEYS[3]  claims      hash  item -> JSON claim record {t, d, v, ip, ua, p (the pipeline,
                             when claimed with one), n (claim count), q (the queue part it
                             came from, with decay on), r (1 when reclaimed)}, written in
                             that order: done.lua reads t, d and v with one match
  KEYS[4]  attempts    hash  item -> times claimed, for items not claimed now (a claim keeps
                             its count in its record; the count returns here if the item
                             leaves the claim undone)
  KEYS[5]  failed      hash  item -> JSON {reason, t}
  KEYS[6]  dl:claims   hash  downloader -> items it holds
  KEYS[7]  blocked:ip  hash  ip -> JSON block entry
  KEYS[8]  blocked:dl  hash  downloader -> JSON block entry
  KEYS[9]  ratelimit   hash  limiter -> theoretical arrival time (ms); '' is the project's
  KEYS[10] timeline    hash  item -> transitions, lines "time event who version"; a claim's
                             own line is written when the item leaves it (see _lib claim_line)
  KEYS[11] stats       hash  pq (items in personal queues)
  KEYS[12] decay       hash  item -> "score reclaims", only for scores below 1
  Derived (same slot): <prefix><queue part>, <prefix>todo:d:<downloader>, <prefix>st:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  R, the number of requests
  ARGV[4 + 10(r-1) ..] per request: downloader, ip, the head of its claim record (the
                       tracker writes it: {"t":now,"d":…,"v":…,"ip":…,"ua":…[,"p":…],"n":
                       the record up to its claim count, `now` as ARGV[1]), version ('' =
                       none), N (>= 1), name_ok (1/0), globally_blocked (1/0), pipeline
                       name ('' = none), pipeline tags (comma-joined), match_only (1/0)

  Output: JSON. {"err":"no_project"} when there is no such project; else an array with, per
  request in order, [items, parts]: the items claimed (an array, never empty) and, for each, the
  queue part it was handed out from (`todo`, `todo:secondary`, `todo#img`, `todo:d:alice`; a
  reclaimed item answers the part its record names, else `todo`), or a refusal:
    {"err":"old_version"}  the version is missing or below min_version
    {"err":"bad_name"}     name_ok is 0
    {"err":"blocked"}      globally blocked (unless ignored), or blocked in the project
    {"err":"token_required"}    no pipeline, and the project requires one
    {"err":"not_for_pipeline"}  the project's tags and the pipeline's do not match (a project
                           with tags serves pipelines carrying one; a match-only pipeline is
                           served by projects naming one of its tags)
    {"err":"not_active"}   the project is paused or aborted (state is neither active nor
                           draining, which older versions set by hand)
    {"err":"budget"}       the downloader holds dl_max_claims items
    {"err":"rate_limited","wait_ms":n}  ms until an item may be claimed
    {"err":"nothing_to_give"}
  Events: none.
  Uses: Q, ST, project_settings, int_of, stat, flush_stats, bulk, bulk_read, hincr_many, timeline,
  timeline_line, decode_claim, leave_claim, version_lt, gcra_room, gcra_allow, gcra_charge, block_holds,
  queue_clock, int_text, SET.
]]
-- Made once, when the library loads (store::scripts: the part before `-- per call`): the
-- call's state, declared here and set by each call, and the phases that use it.
local meta, out, claims, attempts, failed, dl_claims, blocked_ip, blocked_dl, ratelimit, tl
local stats, decay, now, prefix, nreq, now_text
local cfg   -- the project's settings (_lib project_settings)
local args   -- ARGV: a request's fields are read from it where they are used
local reqs, ip_blocks, dl_blocks, held, interval, tat0, tat
local active   -- requests that passed the checks, in order
local out_n, has_attempts, new_attempts, w_out, w_claims, w_unattempt, w_dl, cursor
local origin   -- item -> the queue part it was popped from (decay on only)
local source   -- item -> the queue part it was handed out from (every claim's answer)

-- The call's keys and arguments, and the project's settings (kept across calls while meta's
-- stamp holds: _lib project_settings); false when there is no project.
local function settings(KEYS, ARGV)
  meta, out, claims, attempts, failed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  dl_claims, blocked_ip, blocked_dl, ratelimit, tl = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
  stats, decay = KEYS[11], KEYS[12]
  now, prefix, nreq = tonumber(ARGV[1]), ARGV[2], int_of(ARGV[3])
  now_text = ARGV[1]   -- `now` as Redis takes it (see _lib: numbers as text)
  cfg = project_settings(meta, now)
  return cfg.exists
end

-- Whether the project serves a pipeline with `tags` (comma-joined), `match_only` or not
-- (store::may_serve).
local function serves(tags, match_only)
  local shares = false
  for t in string.gmatch(tags, '[^,]+') do
    if cfg.project_tags[t] then shares = true end
  end
  return (not cfg.any_tags or shares) and (not match_only or shares)
end

local function lookup(key, names)
  if rcall('EXISTS', key) == 0 then return {} end
  return bulk_read('HMGET', key, names)
end

-- Request `r` (`q`, its fields at ARGV[q.a ..]) checked: refused (`q.refusal`), or admitted
-- with what it may take (`q.need`) under its downloader's budget and the project's rate limit,
-- and its claim record.
local function admit(r, q)
  local a = q.a
  local v, p = args[a + 3], args[a + 7]
  if cfg.min_version ~= '' and (v == '' or version_lt(v, cfg.min_version)) then
    q.refusal = { err = 'old_version' }
  elseif args[a + 5] ~= '1' then
    q.refusal = { err = 'bad_name' }
  elseif (args[a + 6] == '1' and not cfg.ignore_global) or block_holds(ip_blocks[r], now)
    or block_holds(dl_blocks[r], now) then
    q.refusal = { err = 'blocked' }
  elseif p == '' and cfg.require_token then
    q.refusal = { err = 'token_required' }
  elseif p ~= '' and not serves(args[a + 8], args[a + 9] == '1') then
    q.refusal = { err = 'not_for_pipeline' }
  elseif not cfg.serving then
    q.refusal = { err = 'not_active' }
  else
    local want = int_of(args[a + 4])
    if cfg.dl_max > 0 then want = math.min(want, cfg.dl_max - held[q.d]) end
    if want <= 0 then
      q.refusal = { err = 'budget' }
    else
      if cfg.rate > 0 then
        local wait
        want, wait = gcra_room(tat, interval, interval * math.max(cfg.burst, 1), want, now)
        if want == 0 then
          q.refusal = { err = 'rate_limited', wait_ms = wait }
        else
          tat = tat + want * interval
        end
      end
      if want > 0 then
        if cfg.dl_max > 0 then held[q.d] = held[q.d] + want end
        q.need, q.got, q.parts, q.reclaimed = want, {}, {}, false
        -- A request of several items keeps its whole records by claim count (negative:
        -- reclaimed), each built once.
        if want > 1 then q.records = {} end
        -- The claim record {t, d, v, ip, ua, p, n} of this request's items, all but `n` (the
        -- tracker's head).
        q.record = args[a + 2]
        active[#active + 1] = q
      end
    end
  end
end

-- Phase 1: the checks of every request, with one read per table for the whole batch; then
-- the state phase 2 fills.
local function check_requests(ARGV)
  local dls, ips = {}, {}
  args, reqs = ARGV, {}
  for r = 1, nreq do
    local a = 4 + 10 * (r - 1)
    local d = ARGV[a]
    reqs[r] = { d = d, a = a }
    dls[r], ips[r] = d, ARGV[a + 1]
  end
  -- Most projects block no one and keep no claim counts: one EXISTS for the three tables.
  local any = rcall('EXISTS', blocked_ip, blocked_dl, attempts) > 0
  ip_blocks, dl_blocks = {}, {}
  if any then ip_blocks, dl_blocks = lookup(blocked_ip, ips), lookup(blocked_dl, dls) end
  held = {}
  if cfg.dl_max > 0 and cfg.serving then
    local raw = bulk_read('HMGET', dl_claims, dls)
    for r = 1, nreq do held[dls[r]] = held[dls[r]] or tonumber(raw[r]) or 0 end
  end
  -- The project's limiter: each request reserves what it may take; charged with what was taken.
  interval = cfg.rate > 0 and 1000 / cfg.rate or 0
  tat0 = cfg.rate > 0 and math.max(tonumber(rcall('HGET', ratelimit, '')) or now, now) or now
  tat = tat0
  active = {}
  for r, q in ipairs(reqs) do admit(r, q) end
  -- Claimed items now: only the claims limit needs them.
  out_n = (#active > 0 and cfg.claims_limit > 0) and rcall('ZCARD', out) or 0
  has_attempts = any and #active > 0 and rcall('EXISTS', attempts) == 1
  new_attempts, origin, source, cursor = {}, {}, {}, 1
  w_out, w_claims, w_unattempt, w_dl = {}, {}, {}, {}
end

-- Phase 2: items for the active requests, in claim order, handed out in request order.

-- Items still wanted by the active requests; `capped` by the room under the claims limit.
local function short(capped)
  local total = 0
  for i = cursor, #active do total = total + active[i].need - #active[i].got end
  if capped and cfg.claims_limit > 0 then total = math.min(total, cfg.claims_limit - out_n) end
  return math.max(total, 0)
end

-- Drops from `items` those claimed too often (they move to `failed`); returns the others.
-- `known`: item -> times claimed so far, where the caller knows it (reclaims); else `attempts`.
local function screen(items, known)
  if #items == 0 then return items end
  local counts = has_attempts and bulk_read('HMGET', attempts, items) or {}
  local ok = {}
  for i, item in ipairs(items) do
    -- From here on the count lives in the claim record (or in `failed`).
    if counts[i] then w_unattempt[#w_unattempt + 1] = item end
    local n = ((known and known[item]) or tonumber(counts[i]) or 0) + 1
    if cfg.max_attempts > 0 and n > cfg.max_attempts then
      rcall('HSET', failed, item, cjson.encode({ reason = 'claimed ' .. (n - 1) .. ' times', t = now }))
      rcall('HDEL', decay, item)
      timeline(tl, item, now, 'failed', '', '')
      stat(prefix, now, ST.failed)
    else
      new_attempts[item] = n
      ok[#ok + 1] = item
    end
  end
  return ok
end

-- Hands `items` to the active requests in order (there is room for all of them).
local function distribute(items, from)
  for _, item in ipairs(items) do
    while #active[cursor].got >= active[cursor].need do cursor = cursor + 1 end
    local q = active[cursor]
    q.got[#q.got + 1] = item
    q.parts[#q.parts + 1] = source[item] or Q.todo
    if from == 'reclaimed' then q.reclaimed = true end
    w_out[#w_out + 1] = now_text
    w_out[#w_out + 1] = item
    w_claims[#w_claims + 1] = item
    local n = new_attempts[item]
    local part = origin[item]
    local key = from == 'reclaimed' and -n or n
    if part then key = key .. ' ' .. part end
    local records = q.records
    local record = records and records[key]
    if not record then
      record = q.record .. int_text(n) .. (part and (',"q":' .. cjson.encode(part)) or '')
        .. (from == 'reclaimed' and ',"r":1}' or '}')
      if records then records[key] = record end
    end
    w_claims[#w_claims + 1] = record
    w_dl[q.d] = (w_dl[q.d] or 0) + 1
    out_n = out_n + 1
  end
end

-- Decay (see the header): items taken back from their claims (decoded records `olds`), each
-- with its score multiplied by the factor, fail below the threshold or wait again in their
-- queue part, behind fresher work.
local DAY = 86400000
local function requeue(items, olds)
  if #items == 0 then return end
  local raw = bulk_read('HMGET', decay, items)
  for i, item in ipairs(items) do
    local old = olds[item]
    local score, reclaims = 1, 0
    if raw[i] then
      local s1, r1 = string.match(raw[i], '^(%S+) (%d+)$')
      score, reclaims = tonumber(s1) or 1, tonumber(r1) or 0
    end
    score, reclaims = score * cfg.decay_factor, reclaims + 1
    local shown = string.format('%.4g', score)
    local line = timeline_line(now, 'decayed:' .. shown, '', '')
    if score < cfg.decay_threshold then
      rcall('HDEL', decay, item)
      rcall('HSET', failed, item, cjson.encode({ t = now, reason = string.format(
        'score %s after %d reclaims, below the decay threshold %s', shown, reclaims, tostring(cfg.decay_threshold)) }))
      leave_claim(tl, nil, item, old, line .. '\n' .. timeline_line(now, 'failed', '', ''))
      stat(prefix, now, ST.failed)
    else
      rcall('HSET', decay, item, string.format('%.9g %d', score, reclaims))
      local part = (type(old.q) == 'string' and cfg.parts_in_order[old.q]) and old.q or Q.todo
      local wait = math.min(DAY * (1 - score) / score, 3650 * DAY) + (cfg.fifo and 0 or DAY)
      rcall('ZADD', prefix .. part, string.format('%d', math.floor(queue_clock() + wait)), item)
      -- Its claim count waits in `attempts` for its next claim.
      leave_claim(tl, attempts, item, old, line)
      has_attempts = true
    end
  end
end

-- Takes back up to `want` claimed items: the oldest ones, or (ttl) those claimed longer than
-- ttl x their claim count ago. With decay on they go back to their queues (or fail), else
-- they are handed out at once.
local function reclaim(want, ttl)
  local candidates
  if ttl then
    candidates = rcall('ZRANGEBYSCORE', out, '-inf', now - ttl, 'LIMIT', 0, want * 4)
  else
    candidates = rcall('ZRANGE', out, 0, want - 1)
  end
  local taken, known, olds = {}, {}, {}
  for _, item in ipairs(candidates) do
    if #taken >= want then break end
    local old = decode_claim(rcall('HGET', claims, item))
    if not ttl or (tonumber(old.t) or 0) + ttl * (tonumber(old.n) or 1) <= now then
      if old.d then w_dl[old.d] = (w_dl[old.d] or 0) - 1 end
      rcall('ZREM', out, item)
      rcall('HDEL', claims, item)
      out_n = out_n - 1
      taken[#taken + 1] = item
      -- Answered as the queue part it first came from (known with decay on), else `todo`.
      source[item] = type(old.q) == 'string' and old.q or Q.todo
      if cfg.decaying then
        olds[item] = old   -- its lines join the timeline in requeue
      else
        leave_claim(tl, nil, item, old, nil)
        known[item] = tonumber(old.n)
      end
    end
  end
  if cfg.decaying then
    if #taken > 0 then stat(prefix, now, ST.reclaimed, #taken) end
    return requeue(taken, olds)
  end
  local ok = screen(taken, known)
  distribute(ok, 'reclaimed')
  if #ok > 0 then stat(prefix, now, ST.reclaimed, #ok) end
end

-- Pops up to `want` items from queue part `part` (with decay on, noting where each came from).
local function pop(part, want)
  local key, items = prefix .. part, {}
  if cfg.by_score then
    -- ZPOPMIN would also answer each score, which Redis writes with C's float formatting.
    items = rcall('ZRANGE', key, '0', string.format('%d', want - 1))
    if #items > 0 then rcall('ZREMRANGEBYRANK', key, '0', string.format('%d', #items - 1)) end
  else
    items = rcall('ZRANDMEMBER', key, want)
    bulk('ZREM', key, items)
  end
  for _, item in ipairs(items) do source[item] = part end
  if cfg.decaying then
    for _, item in ipairs(items) do origin[item] = part end
  end
  return items
end

-- Pops up to `want` items from one queue group: the parts share it in proportion to their
-- sizes, a limited part no more than its limiter allows.
local function group_pop(parts, want)
  if #parts == 1 and not string.find(parts[1], '#', 1, true) then
    return pop(parts[1], want)
  end
  local caps, total = {}, 0
  for i, part in ipairs(parts) do
    local size = rcall('ZCARD', prefix .. part)
    local limiter = string.match(part, '#(.+)$')
    local cap = size
    if limiter and size > 0 then
      local conf = rcall('HGET', meta, SET.pattern_limit .. limiter) or ''
      local prate, pburst = string.match(conf, '^(%S+) (%S+)$')
      cap = math.min(size, (gcra_allow(ratelimit, 'p:' .. limiter, tonumber(prate), tonumber(pburst), size, now)))
    end
    caps[i], total = cap, total + cap
  end
  local items = {}
  if total == 0 then return items end
  for i, part in ipairs(parts) do
    if #items >= want then break end
    local share = math.min(caps[i], math.ceil(want * caps[i] / total), want - #items)
    if share > 0 then
      local popped = pop(part, share)
      for _, item in ipairs(popped) do items[#items + 1] = item end
      local limiter = string.match(part, '#(.+)$')
      if limiter then
        local conf = rcall('HGET', meta, SET.pattern_limit .. limiter) or ''
        gcra_charge(ratelimit, 'p:' .. limiter, tonumber(string.match(conf, '^(%S+)')), #popped, now)
      end
    end
  end
  return items
end

-- Items for the active requests, from their sources in order.
local function fill()
  -- 1. each downloader's own queue
  if (int_of(rcall('HGET', stats, 'pq')) or 0) > 0 then
    for i, q in ipairs(active) do
      cursor = i
      local mine = pop(Q.personal .. q.d, q.need)
      if #mine > 0 then
        rcall('HINCRBY', stats, 'pq', -#mine)
        distribute(screen(mine), 'claimed')
      end
    end
    cursor = 1
  end
  -- 2. reclaims when the claims limit is reached
  if cfg.claims_limit > 0 and out_n >= cfg.claims_limit and short(false) > 0 then reclaim(short(false), nil) end
  -- 2b. with decay on, claims that took too long go back to their queues first, decayed
  if cfg.decaying and cfg.reclaim_ttl > 0 and short(false) > 0 then reclaim(short(false), cfg.reclaim_ttl) end
  -- 3. the queues, in order; a group is popped again only if it gave all that was asked
  for _, parts in ipairs(cfg.groups) do
    local want = short(true)
    while want > 0 do
      local popped = group_pop(parts, want)
      distribute(screen(popped), 'claimed')
      if #popped < want then break end
      want = short(true)
    end
    if short(true) == 0 then break end
  end
  -- 4. reclaims of claims that took too long (with decay off)
  if not cfg.decaying and cfg.reclaim_ttl > 0 and short(false) > 0 then reclaim(short(false), cfg.reclaim_ttl) end
end

-- Phase 3: every claim written at once, and the limiter charged with what was taken.
local function write_claims()
  bulk('ZADD', out, w_out)
  bulk('HSET', claims, w_claims)
  bulk('HDEL', attempts, w_unattempt)
  hincr_many(dl_claims, w_dl)
  local used = 0
  for _, q in ipairs(active) do used = used + #q.got end
  if cfg.rate > 0 and used > 0 then
    rcall('HSET', ratelimit, '', string.format('%.3f', tat0 + used * interval))
  end
end

-- The per-minute counter of each refusal (lifetime counters by reason in /metrics).
local REFUSED = { old_version = ST.refused_old_version, bad_name = ST.refused_bad_name,
  blocked = ST.refused_blocked, token_required = ST.refused_token_required,
  not_for_pipeline = ST.refused_not_for_pipeline, not_active = ST.refused_not_active,
  budget = ST.refused_budget, rate_limited = ST.refused_rate_limited,
  nothing_to_give = ST.refused_nothing_to_give }

-- Each request's answer: its refusal, or its items.
local function answers()
  local result, served, claimed = {}, 0, 0
  stat(prefix, now, ST.requests, nreq)
  for r, q in ipairs(reqs) do
    if q.refusal then
      result[r] = q.refusal
      local code = REFUSED[q.refusal.err]
      if code then stat(prefix, now, code) end
    elseif #q.got == 0 then
      result[r] = { err = 'nothing_to_give' }
      stat(prefix, now, ST.refused_nothing_to_give)
    else
      served, claimed = served + 1, claimed + #q.got
      if q.reclaimed then stat(prefix, now, ST.served_reclaimed) end
      result[r] = { q.got, q.parts }
    end
  end
  if served > 0 then
    stat(prefix, now, ST.served, served)
    stat(prefix, now, ST.claimed, claimed)
  end
  return result
end

-- per call
if not settings(KEYS, ARGV) then return cjson.encode({ err = 'no_project' }) end
check_requests(ARGV)
if #active > 0 then fill() end
write_claims()
local result = answers()
flush_stats(prefix, now)
return cjson.encode(result)
