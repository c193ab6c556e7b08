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
  HMGET: done/read); the reports are then decided in order against that local state
  (done/report), and every write is made once per batch (the completion log gets one entry per
  report). The call's state is one table, `c`, made per call and passed to every phase.

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
-- Made once, when the library loads (store::scripts: the part before `-- per call`, after the
-- parts done/read and done/report): the phases. A call's state is its table `c`.
--
-- The phases, in the order they run (the main line at the end calls them):
--   read_call        the keys, ARGV and settings, then:
--     read_reports   the reports of ARGV and the distinct items they name (done/read)
--     locate         where each item is: claimed, done, failed (a queue part: per report)
--   start_batch      the project's totals, the batch's collections, the reporters' blocks
--   check_report     why a report is refused, if it is (nothing of it written) (done/report)
--   block_reporter   a report whose byte domains differ: its IP blocked, its claims released
--   complete_report  a report recorded: its items moved, counted and logged
--   write_moves      the batch's moves of items between states, once per batch
--   write_figures    the batch's totals, the project's chart and the log's unfolded count

-- The call's keys, arguments and settings, its reports, and where their items are.
local function read_call(KEYS, ARGV)
  local now = tonumber(ARGV[1])
  local c = { meta = KEYS[1], out = KEYS[2], claims = KEYS[3], done = KEYS[4], failed = KEYS[5],
    attempts = KEYS[6], dl_claims = KEYS[7], stats = KEYS[8], domain_bytes = KEYS[9], tl = KEYS[10],
    blocked_ip = KEYS[11], log = KEYS[12], chart = KEYS[13], decay = KEYS[14],
    now = now, prefix = ARGV[2], nrep = int_of(ARGV[3]),
    now_text = ARGV[1],   -- `now` as Redis takes it (see _lib: numbers as text)
    minute = string.format('%d', now / 60000),
    cfg = project_settings(KEYS[1], now),   -- kept across calls while meta's stamp holds
    -- Every field a call sets is named here, so that the table is made at its size once.
    -- The reports, where their items are (done/read), and the project's totals (start_batch).
    reps = nil, state = nil, claim_of = nil, done_items = 0, done_bytes = 0, done_items0 = 0,
    done_bytes0 = 0, folded = nil, journal = 0, journal_items = 0, counts_from = nil, chart_minute = nil,
    -- claims_seen: raw record -> what a done needs of it (done/report claim_info); queued: items
    -- found waiting in a queue (rather than claimed, failed or done); was_out: whether each was
    -- handed out before (done/report handed_out); pipelines_seen: the pipeline of each claim
    -- record that names one; blocked_now: the reporters' IPs blocked in the project now (a block
    -- made by a report of this batch counts for the reports after it).
    claims_seen = {}, queued = {}, was_out = {}, pipelines_seen = {}, blocked_now = {},
    -- What the reports decide, for the batch's writes (w_done: the items newly done, in order;
    -- tl_lines: the lines each one's timeline gets).
    w_out = {}, w_failed = {}, w_queue = {}, w_done = {}, tl_lines = {}, w_dl = {}, dom_add = {},
    pq_delta = 0, logged = 0 }
  if not c.cfg.exists then no_project() end
  local all
  c.reps, all = read_reports(c, ARGV)
  locate(c, all)
  return c
end

-- The batch's starting figures; the reporters' blocks (most projects block no one: one EXISTS
-- instead of a read per reporting address). The project's totals are
-- kept current as reports change them, read once and written back once (HSET of the new values:
-- one command, not an HINCRBY each); `folded` is the last log entry folded.
local function start_batch(c)
  local totals = rcall('HMGET', c.stats, 'done_items', 'done_bytes', 'folded', 'journal', 'journal_items',
    'counts_from', 'chart_minute')
  c.done_items, c.done_bytes = tonumber(totals[1]) or 0, tonumber(totals[2]) or 0
  c.done_items0, c.done_bytes0, c.folded = c.done_items, c.done_bytes, totals[3]
  c.chart_minute = totals[7]
  c.journal, c.journal_items = tonumber(totals[4]) or 0, tonumber(totals[5]) or 0
  c.counts_from = totals[6]
  local any_blocks = rcall('EXISTS', c.blocked_ip) == 1
  local blocked_now = c.blocked_now
  for _, rep in ipairs(c.reps) do
    if blocked_now[rep.ip] == nil then
      blocked_now[rep.ip] = any_blocks and blocked(c.blocked_ip, rep.ip, c.now)
    end
  end
end

-- The chart's point of this minute, made when the minute's first batch is written (the
-- figures in between are stats' own): the last point, if it is `chart_minute`'s, closed with
-- the figures before this batch, and this minute's point added. Returns the fields for stats.
local function chart_point(c)
  local minute = c.minute
  if c.chart_minute == minute then return end
  -- '-1' as text: a number argument costs a float's formatting (see _lib).
  local last = rcall('LINDEX', c.chart, '-1')
  local at = last and string.match(last, '^(%d+)')
  local point = minute .. ' ' .. string.format('%d %d', c.done_items, c.done_bytes)
  if at == minute then
    rcall('LSET', c.chart, '-1', point)   -- a process of an older version made it
  else
    if at and at == c.chart_minute then
      rcall('LSET', c.chart, '-1', at .. ' ' .. string.format('%d %d', c.done_items0, c.done_bytes0))
    end
    rcall('RPUSH', c.chart, point)
  end
  return minute
end

-- The batch's moves: out of claimed, failed and the queues, into done, with timelines.
local function write_moves(c)
  bulk('ZREM', c.out, c.w_out)
  bulk('HDEL', c.claims, c.w_out)
  bulk('HDEL', c.failed, c.w_failed)
  for part, items in pairs(c.w_queue) do bulk('ZREM', c.prefix .. part, items) end
  if c.pq_delta ~= 0 then rcall('HINCRBY', c.stats, 'pq', c.pq_delta) end
  -- Only items that were not claimed have a count here (and claims made before claim records
  -- held the count).
  -- (Most projects have neither table: one EXISTS for both.)
  if rcall('EXISTS', c.attempts, c.decay) > 0 then
    if rcall('EXISTS', c.attempts) == 1 then bulk('HDEL', c.attempts, c.w_done) end
    if rcall('EXISTS', c.decay) == 1 then bulk('HDEL', c.decay, c.w_done) end
  end
  bulk('SADD', c.done, c.w_done)
  timeline_many(c.tl, c.w_done, c.tl_lines)
  hincr_many(c.dl_claims, c.w_dl)
end

-- The batch's figures: the project's totals and chart, and the log entries not folded yet.
local function write_figures(c)
  rcall('HSET', c.stats, 'done_items', string.format('%d', c.done_items), 'done_bytes', string.format('%d', c.done_bytes),
    'journal', string.format('%d', c.journal + c.logged),
    'journal_items', string.format('%d', c.journal_items + c.done_items - c.done_items0))
  for domain, bytes in pairs(c.dom_add) do rcall('HINCRBY', c.domain_bytes, domain, string.format('%d', bytes)) end
  local moved = chart_point(c)
  if moved then rcall('HSET', c.stats, 'chart_minute', moved) end
end

-- per call
local c = read_call(KEYS, ARGV)
start_batch(c)
-- The main line: each report decided in order, then the batch's writes. The answer's JSON is
-- joined here (a refusal's by cjson): cjson writes numbers with C's float formatting.
local result = {}
for r, rep in ipairs(c.reps) do
  local refusal = check_report(c, rep)
  if refusal and refusal.err == 'domain_mismatch' then block_reporter(c, rep) end
  if refusal then
    result[r] = cjson.encode(refusal)
  else
    local counted, dups = complete_report(c, rep)
    result[r] = '{"counted":' .. int_text(counted) .. ',"duplicates":' .. int_text(dups) .. '}'
  end
end
write_moves(c)
if c.logged > 0 then write_figures(c) end
flush_stats(c.prefix, c.now)
return '[' .. table.concat(result, ',') .. ']'
