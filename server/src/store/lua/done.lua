#!lua
--[[
  done: records R done reports of one project in one atomic step. Per report: every item must
  be known (claimed, queued, failed or done), else nothing of that report changes. If the
  reported byte domains differ from the project's, the reporter's IP is blocked until
  now + auto_block_ttl and the report's items that the reporter holds (claims in its name) go
  back to `todo`; items others hold stay theirs. A report from an IP blocked in the project
  changes nothing. Otherwise the
  items move to `done`, each counted once, and the report goes to the completion log (one
  entry per report that counts anything). The per-downloader figures, the unique contributors,
  the events and the per-minute counters of done items, bytes and round trips are made from
  the log later, by `fold.lua`: this script counts the entries it
  adds (stats `journal`, their items `journal_items`), which the fold takes off again.
  Where each item is comes from a few variadic reads for the whole batch (ZMSCORE, SMISMEMBER,
  HMGET); the reports are then decided in order against that local state, and every write is
  made once per batch (the completion log gets one entry per report).

  KEYS[1]  meta          hash    domains, auto_block_ttl, queues (and stamp: _lib project_settings)
  KEYS[2]  out           zset    claimed items
  KEYS[3]  claims        hash    claim records
  KEYS[4]  done          set     completed items
  KEYS[5]  failed        hash    failed items
  KEYS[6]  attempts      hash    item -> times claimed (items not claimed now)
  KEYS[7]  dl:claims     hash    downloader -> items held
  KEYS[8]  stats         hash    done_items, done_bytes, pq (items in personal queues),
                                 disk_todo (items waiting on disk), journal, journal_items,
                                 folded (the last log entry folded; set here when missing),
                                 counts_from (the first entry the fold counts per minute; set
                                 here when missing), chart_minute (the minute of the chart's
                                 last point)
  KEYS[9]  domain_bytes  hash    bytes per domain
  KEYS[10] timeline      hash    item -> transitions; a claim's own line joins it here
  KEYS[11] blocked:ip    hash    ip -> JSON block entry
  KEYS[12] log           stream  completion log (trimmed by fold.lua, never past the unfolded)
  KEYS[13] chart         list    "minute items bytes" cumulative, one entry per minute: the
                                 last one is written when its minute starts and closed when
                                 the next one does (stats `chart_minute`, its minute); a reader
                                 takes the last point's figures from `done_items` and
                                 `done_bytes` (store::stats)
  KEYS[14] decay         hash    item -> decay score; a done item's entry goes
  Derived (same slot): queue parts, todo:d:<downloader>, st:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  R, the number of reports
  ARGV[4..] per report: downloader, version, user agent, ip, id (JSON), pipeline ('' = none),
            bytes (the JSON object domain -> bytes, as the log keeps it: the tracker writes it
            from the same pairs), D, D x (domain, bytes), M, M x item

  Every check of a report comes before its first write, so a report is applied whole or not at
  all, and a refused report leaves the others of its batch alone. A report whose fields do not
  parse (bytes not an integer from 0 to 2^50, an empty item or downloader) is refused; so is
  one that would carry the project's byte total to 2^53, where counters stop being exact.
  Only handed-out work can be completed: an item waiting in a queue is accepted only if it was
  claimed before (it has a claim count in `attempts`, or a claim in its timeline). An item
  claimed now by a pipeline (its record's `p`) is reported only by that pipeline.

  Output: JSON, an array with per report in order:
    {"counted":n,"duplicates":n}          recorded
    {"err":"invalid"}                     fields do not parse; nothing changed
    {"err":"unknown_item","item":s}       an unknown item; nothing changed
    {"err":"never_handed_out","item":s}   an item never handed out; nothing changed
    {"err":"other_pipeline","item":s}     an item claimed by another pipeline (or by one, and
                                          reported without); nothing changed
    {"err":"overflow"}                    the byte total would pass 2^53; nothing changed
    {"err":"domain_mismatch"}             byte domains differ; ip blocked, the reporter's own
                                          claimed items (claimed from its address) released
    {"err":"blocked"}                     the reporter's IP is blocked in the project; nothing
                                          changed
  Log entries: fields t (now), d, ip, ua, v, items (JSON array of the newly done), claimed
  (JSON array of their claim times, 0 unknown), bytes (JSON object domain -> bytes), id.
  Uses: Q, ST, project_settings, no_project, int_of, find_in_queues, stat, flush_stats, bulk, bulk_read, hincr_many,
  timeline_line, timeline_many, decode_claim, claim_line, leave_claim, blocked, int_text.
]]
-- Made once, when the library loads (store::scripts: the part before `-- per call`): the
-- call's state, declared here and set by each call, and the phases that use it.
local meta, out, claims, done, failed, attempts, dl_claims, stats, domain_bytes, tl, blocked_ip
local log, chart, decay, now, prefix, nrep, now_text, minute
local BYTES_MAX, COUNTER_MAX = 2 ^ 50, 2 ^ 53
local cfg   -- the project's settings (_lib project_settings)
local reps, state, claim_of
-- raw record -> { d = downloader, t = claim time (ms, as text), lines = its timeline lines and `done` }.
local claims_seen
-- The project's totals, kept current as reports change them, and the last log entry folded.
-- Read once and written back once (HSET of the new values: one command, not an HINCRBY each).
local done_items, done_bytes, done_items0, done_bytes0, folded, journal, journal_items, counts_from
local chart_minute
-- Items found waiting in a queue (rather than claimed, failed or done), and whether each was
-- handed out before: a claim count kept in `attempts` when it left a claim, or (claims made before
-- records held the count) a claim in its timeline.
local queued, was_out
-- The pipeline of each claim record that names one (pipeline_of).
local pipelines_seen
-- The reporters' IPs blocked in the project now (a block made by a report of this batch
-- counts for the reports after it).
local blocked_now
-- What the reports decide, collected for the batch's writes.
-- (w_done: the items newly done, in order; tl_lines: the lines each one's timeline gets.)
local w_out, w_failed, w_queue, w_done, tl_lines, w_dl, dom_add, pq_delta, logged

-- The phases, in the order they run (the main line at the end calls them):
--   read_call        the keys, ARGV and settings, then:
--     read_reports   the reports of ARGV and the distinct items they name
--     locate         where each item is: claimed, done, failed (a queue part: per report)
--   start_batch      the project's totals, the batch's collections, the reporters' blocks
--   check_report     why a report is refused, if it is (nothing of it written)
--   block_reporter   a report whose byte domains differ: its IP blocked, its claims released
--   complete_report  a report recorded: its items moved, counted and logged
--   write_moves      the batch's moves of items between states, once per batch
--   write_figures    the batch's totals, the project's chart and the log's unfolded count

-- The reports, and the distinct items they name (a refused report's items are not looked up).
local function read_reports(ARGV)
  local reps, all, named = {}, {}, {}
  local a = 4
  for r = 1, nrep do
    -- doms: the byte domains as ARGV gives them, name then bytes (a number), flat.
    local rep = { who = ARGV[a], version = ARGV[a + 1], ua = ARGV[a + 2], ip = ARGV[a + 3], id = ARGV[a + 4],
      pipeline = ARGV[a + 5], bytes = ARGV[a + 6], doms = {}, items = {}, total = 0 }
    local ndom = int_of(ARGV[a + 7])
    if rep.who == '' then rep.bad = true end
    local doms = rep.doms
    for d = 0, ndom - 1 do
      local name, value = ARGV[a + 8 + 2 * d], ARGV[a + 9 + 2 * d]
      local n = string.match(value, '^%d+$') and #value <= 16 and tonumber(value)
      if not n or n > BYTES_MAX or name == '' then rep.bad = true else rep.total = rep.total + n end
      doms[2 * d + 1], doms[2 * d + 2] = name, n or 0
    end
    local nitems = int_of(ARGV[a + 8 + 2 * ndom])
    local at = a + 9 + 2 * ndom
    if nitems < 1 then rep.bad = true end
    for i = at, at + nitems - 1 do
      local item = ARGV[i]
      if item == '' then rep.bad = true end
      rep.items[#rep.items + 1] = item
    end
    if not rep.bad then
      for _, item in ipairs(rep.items) do
        if not named[item] then
          named[item] = true
          all[#all + 1] = item
        end
      end
    end
    a = at + nitems
    reps[r] = rep
  end
  return reps, all
end

-- Where each item is: 'out', 'done', 'failed', or (looked up per report) a queue part; and the
-- claim record of each claimed one. A claimed item has its record (every script writes and
-- deletes the two together), so the records are read first; `out` is asked only about the
-- items without one (ZMSCORE answers each score as text made by C's float formatting).
local function locate(all)
  local state, claim_of = {}, {}
  local raw = bulk_read('HMGET', claims, all)
  local rest = {}
  for i, item in ipairs(all) do
    if raw[i] then
      state[item], claim_of[item] = 'out', raw[i]
    else
      rest[#rest + 1] = item
    end
  end
  if #rest > 0 then
    local scores, left = bulk_read('ZMSCORE', out, rest), {}
    for i, item in ipairs(rest) do
      if scores[i] then state[item] = 'out' else left[#left + 1] = item end
    end
    rest = left
  end
  if #rest > 0 then
    local isdone = bulk_read('SMISMEMBER', done, rest)
    local rest2 = {}
    for i, item in ipairs(rest) do
      if isdone[i] == 1 then state[item] = 'done' else rest2[#rest2 + 1] = item end
    end
    if #rest2 > 0 and rcall('EXISTS', failed) == 1 then
      local f = bulk_read('HMGET', failed, rest2)
      for i, item in ipairs(rest2) do
        if f[i] then state[item] = 'failed' end
      end
    end
  end
  return state, claim_of
end

-- The call's keys, arguments and settings, its reports, and where their items are.
local function read_call(KEYS, ARGV)
  meta, out, claims, done, failed, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  dl_claims, stats, domain_bytes, tl, blocked_ip = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
  log, chart, decay = KEYS[12], KEYS[13], KEYS[14]
  now, prefix, nrep = tonumber(ARGV[1]), ARGV[2], int_of(ARGV[3])
  now_text = ARGV[1]   -- `now` as Redis takes it (see _lib: numbers as text)
  minute = string.format('%d', now / 60000)
  cfg = project_settings(meta, now)   -- kept across calls while meta's stamp holds
  if not cfg.exists then no_project() end
  local all
  reps, all = read_reports(ARGV)
  state, claim_of = locate(all)
end

-- The batch's starting figures and empty collections; the reporters' blocks (most projects
-- block no one: one EXISTS instead of a read per reporting address).
local function start_batch()
  local totals = rcall('HMGET', stats, 'done_items', 'done_bytes', 'folded', 'journal', 'journal_items', 'counts_from',
    'chart_minute')
  done_items, done_bytes = tonumber(totals[1]) or 0, tonumber(totals[2]) or 0
  done_items0, done_bytes0, folded = done_items, done_bytes, totals[3]
  chart_minute = totals[7]
  journal, journal_items = tonumber(totals[4]) or 0, tonumber(totals[5]) or 0
  counts_from = totals[6]
  claims_seen, queued, was_out, pipelines_seen, blocked_now = {}, {}, {}, {}, {}
  w_out, w_failed, w_queue, w_done, tl_lines = {}, {}, {}, {}, {}
  w_dl, dom_add, pq_delta, logged = {}, {}, 0, 0
  local any_blocks = rcall('EXISTS', blocked_ip) == 1
  for _, rep in ipairs(reps) do
    if blocked_now[rep.ip] == nil then
      blocked_now[rep.ip] = any_blocks and blocked(blocked_ip, rep.ip, now)
    end
  end
end

-- The chart's point of this minute, made when the minute's first batch is written (the
-- figures in between are stats' own): the last point, if it is `chart_minute`'s, closed with
-- the figures before this batch, and this minute's point added. Returns the fields for stats.
local function chart_point()
  if chart_minute == minute then return end
  -- '-1' as text: a number argument costs a float's formatting (see _lib).
  local last = rcall('LINDEX', chart, '-1')
  local at = last and string.match(last, '^(%d+)')
  local point = minute .. ' ' .. string.format('%d %d', done_items, done_bytes)
  if at == minute then
    rcall('LSET', chart, '-1', point)   -- a process of an older version made it
  else
    if at and at == chart_minute then
      rcall('LSET', chart, '-1', at .. ' ' .. string.format('%d %d', done_items0, done_bytes0))
    end
    rcall('RPUSH', chart, point)
  end
  return minute
end

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
-- count `n`), so a done of a batch reads it once, not once per item (claims_seen).
local function claim_info(raw, done_line)
  local key = raw or ''
  local c = claims_seen[key]
  if not c then
    local d, t, line = claim_fields(raw)
    c = { d = d, t = t, line = line }
    claims_seen[key] = c
  end
  if c.done ~= done_line then
    c.done, c.lines = done_line, c.line and (c.line .. '\n' .. done_line) or done_line
  end
  return c
end

local function handed_out(item)
  if was_out[item] == nil then
    local yes = rcall('HEXISTS', attempts, item) == 1
    if not yes then
      local t = rcall('HGET', tl, item)
      yes = t and (string.find(t, ' claimed ', 1, true) or string.find(t, ' reclaimed ', 1, true)) and true or false
    end
    was_out[item] = yes
  end
  return was_out[item]
end

-- The pipeline a claim record names (`p`), or nil; decoded once per record, and only for
-- records that name one (a claim made with a token).
local function pipeline_of(raw)
  if not raw or not string.find(raw, '"p":', 1, true) then return nil end
  if pipelines_seen[raw] == nil then pipelines_seen[raw] = decode_claim(raw).p or false end
  return pipelines_seen[raw] or nil
end

-- Why `rep` is refused ({err = ...}), or nil; 'domain_mismatch' is acted on by block_reporter.
-- Looks up, per item not claimed, done or failed, the queue part that holds it.
local function check_report(rep)
  if rep.bad then return { err = 'invalid' } end
  if blocked_now[rep.ip] then return { err = 'blocked' } end
  for _, item in ipairs(rep.items) do
    if not state[item] then
      state[item] = find_in_queues(prefix, cfg.groups, item, rep.who)
      if state[item] then queued[item] = true end
    end
    if not state[item] then return { err = 'unknown_item', item = item } end
    if queued[item] and state[item] ~= 'done' and not handed_out(item) then
      return { err = 'never_handed_out', item = item }
    end
    if state[item] == 'out' then
      local p = pipeline_of(claim_of[item])
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
  if done_bytes + rep.total >= COUNTER_MAX then return { err = 'overflow' } end
  return nil
end

-- A report whose byte domains differ from the project's: its IP blocked until now +
-- auto_block_ttl, and the items it holds (claims in its name) back to `todo`.
local function block_reporter(rep)
  local who = rep.who
  rcall('HSET', blocked_ip, rep.ip, cjson.encode({ reason = 'byte domains do not match the project', by = 'auto',
    t = now, expires = now + cfg.block_ttl }))
  blocked_now[rep.ip] = true
  for _, item in ipairs(rep.items) do
    local claim = state[item] == 'out' and decode_claim(claim_of[item])
    -- Only the reporter's own claims, as release.lua decides it: its name and the address it
    -- claimed from (another address sending that name gives back nothing of the claimant's).
    if claim and claim.d == who and (not claim.ip or claim.ip == rep.ip) then
      if claim.d then w_dl[claim.d] = (w_dl[claim.d] or 0) - 1 end
      rcall('ZREM', out, item)
      rcall('HDEL', claims, item)
      rcall('ZADD', prefix .. Q.todo, 0, item)
      state[item] = Q.todo
      leave_claim(tl, attempts, item, claim, timeline_line(now, 'released', who, rep.version))
    end
  end
end

-- The report's completion log entry; `fresh` its newly done items, claimed at `claimed_at` (ms, as text).
-- A log that has no fold cursor yet (a project from before the fold) gets one first: every
-- entry before this one was counted where it was made.
local function log_report(rep, fresh, claimed_at)
  local doms = rep.doms
  for d = 1, #doms, 2 do
    local name = doms[d]
    dom_add[name] = (dom_add[name] or 0) + doms[d + 1]
  end
  done_items, done_bytes = done_items + #fresh, done_bytes + rep.total
  if not folded then
    local last = rcall('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
    folded = last and last[1] or '0-0'
    rcall('HSET', stats, 'folded', folded)
  end
  local at = #claimed_at == 1 and ('[' .. claimed_at[1] .. ']') or ('[' .. table.concat(claimed_at, ',') .. ']')
  local id = rcall('XADD', log, '*', 't', now_text, 'd', rep.who, 'ip', rep.ip, 'ua', rep.ua, 'v', rep.version,
    'items', cjson.encode(fresh), 'claimed', at, 'bytes', rep.bytes, 'id', rep.id)
  -- The first entry whose per-minute counters are the fold's (a done script from before
  -- counted them itself): the fold counts this one and those after it.
  if not counts_from then
    counts_from = id
    rcall('HSET', stats, 'counts_from', id)
  end
  logged = logged + 1
end

-- A report recorded: each of its items not done yet leaves where it is for `done` (counted
-- once), the others are duplicates. Returns how many were counted, and how many were duplicates.
local function complete_report(rep)
  local fresh, claimed_at, dups = {}, {}, 0
  local done_line = timeline_line(now_text, 'done', rep.who, rep.version)
  for _, item in ipairs(rep.items) do
    local w = state[item]
    if w == 'done' then
      dups = dups + 1
    else
      local t0, lines = '0', done_line
      if w == 'out' then
        local c = claim_info(claim_of[item], done_line)
        lines, t0 = c.lines, c.t
        if c.d then w_dl[c.d] = (w_dl[c.d] or 0) - 1 end
        w_out[#w_out + 1] = item
      elseif w == 'failed' then
        w_failed[#w_failed + 1] = item
      else
        w_queue[w] = w_queue[w] or {}
        table.insert(w_queue[w], item)
        if string.sub(w, 1, #Q.personal) == Q.personal then pq_delta = pq_delta - 1 end
      end
      state[item] = 'done'
      w_done[#w_done + 1] = item
      tl_lines[#tl_lines + 1] = lines
      fresh[#fresh + 1] = item
      claimed_at[#claimed_at + 1] = t0
    end
  end
  if #fresh > 0 then log_report(rep, fresh, claimed_at) end
  if dups > 0 then stat(prefix, now, ST.duplicate_dones, dups) end
  return #fresh, dups
end

-- The batch's moves: out of claimed, failed and the queues, into done, with timelines.
local function write_moves()
  bulk('ZREM', out, w_out)
  bulk('HDEL', claims, w_out)
  bulk('HDEL', failed, w_failed)
  for part, items in pairs(w_queue) do bulk('ZREM', prefix .. part, items) end
  if pq_delta ~= 0 then rcall('HINCRBY', stats, 'pq', pq_delta) end
  -- Only items that were not claimed have a count here (and claims made before claim records
  -- held the count).
  -- (Most projects have neither table: one EXISTS for both.)
  if rcall('EXISTS', attempts, decay) > 0 then
    if rcall('EXISTS', attempts) == 1 then bulk('HDEL', attempts, w_done) end
    if rcall('EXISTS', decay) == 1 then bulk('HDEL', decay, w_done) end
  end
  bulk('SADD', done, w_done)
  timeline_many(tl, w_done, tl_lines)
  hincr_many(dl_claims, w_dl)
end

-- The batch's figures: the project's totals and chart, and the log entries not folded yet.
local function write_figures()
  rcall('HSET', stats, 'done_items', string.format('%d', done_items), 'done_bytes', string.format('%d', done_bytes),
    'journal', string.format('%d', journal + logged), 'journal_items', string.format('%d', journal_items + done_items - done_items0))
  for domain, bytes in pairs(dom_add) do rcall('HINCRBY', domain_bytes, domain, string.format('%d', bytes)) end
  local moved = chart_point()
  if moved then rcall('HSET', stats, 'chart_minute', moved) end
end

-- per call
read_call(KEYS, ARGV)
start_batch()
-- The main line: each report decided in order, then the batch's writes. The answer's JSON is
-- joined here (a refusal's by cjson): cjson writes numbers with C's float formatting.
local result = {}
for r, rep in ipairs(reps) do
  local refusal = check_report(rep)
  if refusal and refusal.err == 'domain_mismatch' then block_reporter(rep) end
  if refusal then
    result[r] = cjson.encode(refusal)
  else
    local counted, dups = complete_report(rep)
    result[r] = '{"counted":' .. int_text(counted) .. ',"duplicates":' .. int_text(dups) .. '}'
  end
end
write_moves()
if logged > 0 then write_figures() end
flush_stats(prefix, now)
return '[' .. table.concat(result, ',') .. ']'
