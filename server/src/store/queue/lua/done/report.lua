--[[
  done/report: each report of done.lua decided in order: why it is refused, the block of a
  reporter whose byte domains differ, and a recorded report's moves, counts and log entry
  (collected in `c`'s `w_*` for done.lua's writes). Each function takes the call's state `c`.
]]

local COUNTER_MAX = 2 ^ 53

-- What a done needs of claim record `raw`: its downloader, its claim time (ms, as text) and
-- its timeline line (nil for an empty record). A record as claim.lua writes it (t, d and v
-- first) is read with one anchored match (no table, no number parsed but the time). Any other
-- record (an older layout, a name or version with an escape) is decoded whole.
local function claim_fields(raw)
  if raw then
    local t, d, v = string.match(raw, '^{"t":(%d+),"d":"([^"\\]*)","v":"([^"\\]*)"')
    if d then
      local what = string.sub(raw, -7) == ',"r":1}' and 'reclaimed' or 'claimed'
      return d, t, timeline_line(t, what, d, v)
    end
  end
  local claim = decode_claim(raw)
  return claim.d, string.format('%d', tonumber(claim.t) or 0), claim_line(claim)
end

-- The claim records read, each once: the items of one claim request share theirs (all but its
-- count `n`), so a done of a batch reads it once, not once per item (c.claims_seen: raw record
-- -> { d = downloader, t = claim time, lines = its timeline lines and `done` }).
local function claim_info(c, raw, done_line)
  local key = raw or ''
  local seen = c.claims_seen[key]
  if not seen then
    local d, t, line = claim_fields(raw)
    seen = { d = d, t = t, line = line }
    c.claims_seen[key] = seen
  end
  if seen.done ~= done_line then
    seen.done, seen.lines = done_line, seen.line and (seen.line .. '\n' .. done_line) or done_line
  end
  return seen
end

-- Whether an item found waiting in a queue was handed out before: a claim count kept in
-- `attempts` when it left a claim, or (claims made before records held the count) a claim in
-- its timeline.
local function handed_out(c, item)
  local was_out = c.was_out
  if was_out[item] == nil then
    local yes = rcall('HEXISTS', c.attempts, item) == 1
    if not yes then
      local t = rcall('HGET', c.tl, item)
      yes = t and (string.find(t, ' claimed ', 1, true) or string.find(t, ' reclaimed ', 1, true)) and true or false
    end
    was_out[item] = yes
  end
  return was_out[item]
end

-- The pipeline a claim record names (`p`), or nil; decoded once per record, and only for
-- records that name one (a claim made with a token).
local function pipeline_of(c, raw)
  if not raw or not string.find(raw, '"p":', 1, true) then return nil end
  local seen = c.pipelines_seen
  if seen[raw] == nil then seen[raw] = decode_claim(raw).p or false end
  return seen[raw] or nil
end

-- Why `rep` is refused ({err = ...}), or nil; 'domain_mismatch' is acted on by block_reporter.
-- Looks up, per item not claimed, done or failed, the queue part that holds it.
local function check_report(c, rep)
  if rep.bad then return { err = 'invalid' } end
  if c.blocked_now[rep.ip] then return { err = 'blocked' } end
  local state, queued, cfg = c.state, c.queued, c.cfg
  for _, item in ipairs(rep.items) do
    if not state[item] then
      state[item] = find_in_queues(c.prefix, cfg.groups, item, rep.who)
      if state[item] then queued[item] = true end
    end
    if not state[item] then return { err = 'unknown_item', item = item } end
    if queued[item] and state[item] ~= 'done' and not handed_out(c, item) then
      return { err = 'never_handed_out', item = item }
    end
    if state[item] == 'out' then
      local p = pipeline_of(c, c.claim_of[item])
      if p and p ~= rep.pipeline then return { err = 'other_pipeline', item = item } end
    end
  end
  if cfg.ndomains > 0 then
    local seen, doms = 0, rep.doms
    for d = 1, #doms, 2 do
      if not cfg.domains[doms[d]] then return { err = 'domain_mismatch' } end
      seen = seen + 1
    end
    if seen ~= cfg.ndomains then return { err = 'domain_mismatch' } end
  end
  if c.done_bytes + rep.total >= COUNTER_MAX then return { err = 'overflow' } end
  return nil
end

-- A report whose byte domains differ from the project's: its IP blocked until now +
-- auto_block_ttl, and the items it holds (claims in its name) back to `todo`.
local function block_reporter(c, rep)
  local who, now, state, w_dl = rep.who, c.now, c.state, c.w_dl
  rcall('HSET', c.blocked_ip, rep.ip, cjson.encode({ reason = 'byte domains do not match the project', by = 'auto',
    t = now, expires = now + c.cfg.block_ttl }))
  c.blocked_now[rep.ip] = true
  for _, item in ipairs(rep.items) do
    local claim = state[item] == 'out' and decode_claim(c.claim_of[item])
    -- Only the reporter's own claims, as release.lua decides it: its name and the address it
    -- claimed from (another address sending that name gives back nothing of the claimant's).
    if claim and claim.d == who and (not claim.ip or claim.ip == rep.ip) then
      if claim.d then w_dl[claim.d] = (w_dl[claim.d] or 0) - 1 end
      rcall('ZREM', c.out, item)
      rcall('HDEL', c.claims, item)
      rcall('ZADD', c.prefix .. Q.todo, 0, item)
      state[item] = Q.todo
      leave_claim(c.tl, c.attempts, item, claim, timeline_line(now, 'released', who, rep.version))
    end
  end
end

-- The report's completion log entry; `fresh` its newly done items, claimed at `claimed_at` (ms, as text).
-- A log that has no fold cursor yet (a project from before the fold) gets one first: every
-- entry before this one was counted where it was made.
local function log_report(c, rep, fresh, claimed_at)
  local doms, dom_add = rep.doms, c.dom_add
  for d = 1, #doms, 2 do
    local name = doms[d]
    dom_add[name] = (dom_add[name] or 0) + doms[d + 1]
  end
  c.done_items, c.done_bytes = c.done_items + #fresh, c.done_bytes + rep.total
  if not c.folded then
    local last = rcall('XREVRANGE', c.log, '+', '-', 'COUNT', 1)[1]
    c.folded = last and last[1] or '0-0'
    rcall('HSET', c.stats, 'folded', c.folded)
  end
  local at = #claimed_at == 1 and ('[' .. claimed_at[1] .. ']') or ('[' .. table.concat(claimed_at, ',') .. ']')
  local id = rcall('XADD', c.log, '*', 't', c.now_text, 'd', rep.who, 'ip', rep.ip, 'ua', rep.ua, 'v', rep.version,
    'items', cjson.encode(fresh), 'claimed', at, 'bytes', rep.bytes, 'id', rep.id)
  -- The first entry whose per-minute counters are the fold's (a done script from before
  -- counted them itself): the fold counts this one and those after it.
  if not c.counts_from then
    c.counts_from = id
    rcall('HSET', c.stats, 'counts_from', id)
  end
  c.logged = c.logged + 1
end

-- A report recorded: each of its items not done yet leaves where it is for `done` (counted
-- once), the others are duplicates. Returns how many were counted, and how many were duplicates.
local function complete_report(c, rep)
  local fresh, claimed_at, dups = {}, {}, 0
  local state, w_dl, w_done, tl_lines, w_queue = c.state, c.w_dl, c.w_done, c.tl_lines, c.w_queue
  local done_line = timeline_line(c.now_text, 'done', rep.who, rep.version)
  for _, item in ipairs(rep.items) do
    local w = state[item]
    if w == 'done' then
      dups = dups + 1
    else
      local t0, lines = '0', done_line
      if w == 'out' then
        local seen = claim_info(c, c.claim_of[item], done_line)
        lines, t0 = seen.lines, seen.t
        if seen.d then w_dl[seen.d] = (w_dl[seen.d] or 0) - 1 end
        c.w_out[#c.w_out + 1] = item
      elseif w == 'failed' then
        c.w_failed[#c.w_failed + 1] = item
      else
        w_queue[w] = w_queue[w] or {}
        table.insert(w_queue[w], item)
        if string.sub(w, 1, #Q.personal) == Q.personal then c.pq_delta = c.pq_delta - 1 end
      end
      state[item] = 'done'
      w_done[#w_done + 1] = item
      tl_lines[#tl_lines + 1] = lines
      fresh[#fresh + 1] = item
      claimed_at[#claimed_at + 1] = t0
    end
  end
  if #fresh > 0 then log_report(c, rep, fresh, claimed_at) end
  if dups > 0 then stat(c.prefix, c.now, ST.duplicate_dones, dups) end
  return #fresh, dups
end
