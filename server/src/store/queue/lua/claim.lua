#!lua
--[[
  claim: serves R claim requests of one project in one atomic step, each up to N items, in
  claim order: the downloader's own queue; reclaims when the claims limit is reached; the
  queue groups of meta `queues` (todo, todo:backfeed (+ shards), todo:secondary, todo:redo,
  each with its pattern-limited parts `Q#name`); reclaims of claims older than TTL x claims.
  Within a queue part, items go lowest score first: in FIFO projects the order of arrival, in
  the others a shuffle drawn when the item was queued (_lib queue_scorer; projects from before,
  meta `shuffled` unset, draw at random from the part instead).
  Items claimed more than `max_attempts` times move to `failed` instead of being handed out.
  Score decay (meta `decay_factor` above 0; docs/queue-engine.md): each reclaim multiplies an
  item's score by the factor; below `decay_threshold` it fails, else it waits again in the
  queue part it came from, behind fresher work (claim/take requeue).

  Checks per request, in PROTOCOL.md's order: version, name, blocked, pipeline token (required,
  and tags: store::may_serve decides the same), state, per-downloader budget, rate limit,
  nothing to give (the refusals below). The batch is served in three phases so that Redis sees
  a few variadic calls per batch, not several calls per item: checks (one HMGET per table for
  all requests, here), then items popped for all requests at once and handed out in request
  order (claim/pop, claim/take), then every claim written at once (here). The call's state is
  one table, `c`, made per call and passed to every phase.

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
-- Made once, when the library loads (after the parts claim/take and claim/pop): the phases.

-- The call's keys and arguments, and the project's settings (kept across calls while meta's
-- stamp holds: _lib project_settings); nil when there is no project.
local function read_call(KEYS, ARGV)
  local now = tonumber(ARGV[1])
  local c = { meta = KEYS[1], out = KEYS[2], claims = KEYS[3], attempts = KEYS[4], failed = KEYS[5],
    dl_claims = KEYS[6], blocked_ip = KEYS[7], blocked_dl = KEYS[8], ratelimit = KEYS[9], tl = KEYS[10],
    stats = KEYS[11], decay = KEYS[12], now = now, prefix = ARGV[2], nreq = int_of(ARGV[3]),
    now_text = ARGV[1],   -- `now` as Redis takes it (see _lib: numbers as text)
    args = ARGV,   -- a request's fields are read from it where they are used
    cfg = project_settings(KEYS[1], now),
    -- Every field a call sets is named here, so that the table is made at its size once.
    -- Phase 1 (check_requests): the requests, their blocks and budgets, the project's limiter
    -- (interval, tat0, tat), the requests admitted (`active`, in order), claimed items now.
    reqs = nil, ip_blocks = nil, dl_blocks = nil, held = nil, interval = 0, tat0 = 0, tat = 0,
    active = nil, out_n = 0, has_attempts = false,
    -- Phase 2 (claim/pop, claim/take): each item's claim count, the queue part it was popped
    -- from (decay on only: origin) and handed out from (source), the request being served.
    new_attempts = {}, origin = {}, source = {}, cursor = 1,
    -- Phase 3's writes.
    w_out = {}, w_claims = {}, w_unattempt = {}, w_dl = {} }
  return c.cfg.exists and c or nil
end

-- Whether the project serves a pipeline with `tags` (comma-joined), `match_only` or not
-- (store::may_serve).
local function serves(cfg, tags, match_only)
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
local function admit(c, r, q)
  local cfg, args, a = c.cfg, c.args, q.a
  local v, p = args[a + 3], args[a + 7]
  if cfg.min_version ~= '' and (v == '' or version_lt(v, cfg.min_version)) then
    q.refusal = { err = 'old_version' }
  elseif args[a + 5] ~= '1' then
    q.refusal = { err = 'bad_name' }
  elseif (args[a + 6] == '1' and not cfg.ignore_global) or block_holds(c.ip_blocks[r], c.now)
    or block_holds(c.dl_blocks[r], c.now) then
    q.refusal = { err = 'blocked' }
  elseif p == '' and cfg.require_token then
    q.refusal = { err = 'token_required' }
  elseif p ~= '' and not serves(cfg, args[a + 8], args[a + 9] == '1') then
    q.refusal = { err = 'not_for_pipeline' }
  elseif not cfg.serving then
    q.refusal = { err = 'not_active' }
  else
    local want = int_of(args[a + 4])
    if cfg.dl_max > 0 then want = math.min(want, cfg.dl_max - c.held[q.d]) end
    if want <= 0 then
      q.refusal = { err = 'budget' }
      return
    end
    if cfg.rate > 0 then
      local wait
      want, wait = gcra_room(c.tat, c.interval, c.interval * math.max(cfg.burst, 1), want, c.now)
      if want == 0 then
        q.refusal = { err = 'rate_limited', wait_ms = wait }
        return
      end
      c.tat = c.tat + want * c.interval
    end
    if cfg.dl_max > 0 then c.held[q.d] = c.held[q.d] + want end
    q.need, q.got, q.parts, q.reclaimed = want, {}, {}, false
    -- A request of several items keeps its whole records by claim count (negative:
    -- reclaimed), each built once.
    if want > 1 then q.records = {} end
    -- The claim record {t, d, v, ip, ua, p, n} of its items, all but `n` (the tracker's head).
    q.record = args[a + 2]
    c.active[#c.active + 1] = q
  end
end

-- Phase 1: the checks of every request, with one read per table for the whole batch; then
-- the state phase 2 fills.
local function check_requests(c)
  local cfg, args, dls, ips, reqs = c.cfg, c.args, {}, {}, {}
  for r = 1, c.nreq do
    local a = 4 + 10 * (r - 1)
    local d = args[a]
    reqs[r] = { d = d, a = a }
    dls[r], ips[r] = d, args[a + 1]
  end
  c.reqs = reqs
  -- Most projects block no one and keep no claim counts: one EXISTS for the three tables.
  local any = rcall('EXISTS', c.blocked_ip, c.blocked_dl, c.attempts) > 0
  c.ip_blocks, c.dl_blocks = {}, {}
  if any then c.ip_blocks, c.dl_blocks = lookup(c.blocked_ip, ips), lookup(c.blocked_dl, dls) end
  local held = {}
  if cfg.dl_max > 0 and cfg.serving then
    local raw = bulk_read('HMGET', c.dl_claims, dls)
    for r = 1, c.nreq do held[dls[r]] = held[dls[r]] or tonumber(raw[r]) or 0 end
  end
  c.held = held
  -- The project's limiter: each request reserves what it may take; charged with what was taken.
  c.interval = cfg.rate > 0 and 1000 / cfg.rate or 0
  c.tat0 = cfg.rate > 0 and math.max(tonumber(rcall('HGET', c.ratelimit, '')) or c.now, c.now) or c.now
  c.tat = c.tat0
  c.active = {}
  for r, q in ipairs(reqs) do admit(c, r, q) end
  -- Claimed items now: only the claims limit needs them.
  c.out_n = (#c.active > 0 and cfg.claims_limit > 0) and rcall('ZCARD', c.out) or 0
  c.has_attempts = any and #c.active > 0 and rcall('EXISTS', c.attempts) == 1
end

-- Phase 3: every claim written at once, and the limiter charged with what was taken.
local function write_claims(c)
  bulk('ZADD', c.out, c.w_out)
  bulk('HSET', c.claims, c.w_claims)
  bulk('HDEL', c.attempts, c.w_unattempt)
  hincr_many(c.dl_claims, c.w_dl)
  local used = 0
  for _, q in ipairs(c.active) do used = used + #q.got end
  if c.cfg.rate > 0 and used > 0 then
    rcall('HSET', c.ratelimit, '', string.format('%.3f', c.tat0 + used * c.interval))
  end
end

-- The per-minute counter of each refusal (lifetime counters by reason in /metrics).
local REFUSED = { old_version = ST.refused_old_version, bad_name = ST.refused_bad_name,
  blocked = ST.refused_blocked, token_required = ST.refused_token_required,
  not_for_pipeline = ST.refused_not_for_pipeline, not_active = ST.refused_not_active,
  budget = ST.refused_budget, rate_limited = ST.refused_rate_limited,
  nothing_to_give = ST.refused_nothing_to_give }

-- Each request's answer: its refusal, or its items.
local function answers(c)
  local result, served, claimed, prefix, now = {}, 0, 0, c.prefix, c.now
  stat(prefix, now, ST.requests, c.nreq)
  for r, q in ipairs(c.reqs) do
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
local c = read_call(KEYS, ARGV)
if not c then return cjson.encode({ err = 'no_project' }) end
check_requests(c)
if #c.active > 0 then fill(c) end
write_claims(c)
local result = answers(c)
flush_stats(c.prefix, c.now)
return cjson.encode(result)
