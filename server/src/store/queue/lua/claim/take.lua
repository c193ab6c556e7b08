--[[
  claim/take: phase 2 of claim.lua, its items handed to the requests: what they still want,
  items claimed too often screened out, items handed out in request order, and claims taken
  back (reclaims, and with score decay, their requeue). Every function takes the call's state
  `c` (claim.lua read_call, check_requests).
]]

-- Items still wanted by the active requests; `capped` by the room under the claims limit.
local function short(c, capped)
  local total, active = 0, c.active
  for i = c.cursor, #active do total = total + active[i].need - #active[i].got end
  local limit = c.cfg.claims_limit
  if capped and limit > 0 then total = math.min(total, limit - c.out_n) end
  return math.max(total, 0)
end

-- Drops from `items` those claimed too often (they move to `failed`); returns the others.
-- `known`: item -> times claimed so far, where the caller knows it (reclaims); else `attempts`.
local function screen(c, items, known)
  if #items == 0 then return items end
  local counts = c.has_attempts and bulk_read('HMGET', c.attempts, items) or {}
  local max, new_attempts, unattempt, ok = c.cfg.max_attempts, c.new_attempts, c.w_unattempt, {}
  for i, item in ipairs(items) do
    -- From here on the count lives in the claim record (or in `failed`).
    if counts[i] then unattempt[#unattempt + 1] = item end
    local n = ((known and known[item]) or tonumber(counts[i]) or 0) + 1
    if max > 0 and n > max then
      rcall('HSET', c.failed, item, cjson.encode({ reason = 'claimed ' .. (n - 1) .. ' times', t = c.now }))
      rcall('HDEL', c.decay, item)
      timeline(c.tl, item, c.now, 'failed', '', '')
      stat(c.prefix, c.now, ST.failed)
    else
      new_attempts[item] = n
      ok[#ok + 1] = item
    end
  end
  return ok
end

-- Hands `items` to the active requests in order (there is room for all of them).
local function distribute(c, items, from)
  local active, w_out, w_claims, w_dl, now_text = c.active, c.w_out, c.w_claims, c.w_dl, c.now_text
  local source, origin, new_attempts, cursor = c.source, c.origin, c.new_attempts, c.cursor
  local reclaimed = from == 'reclaimed'
  for _, item in ipairs(items) do
    while #active[cursor].got >= active[cursor].need do cursor = cursor + 1 end
    local q = active[cursor]
    q.got[#q.got + 1] = item
    q.parts[#q.parts + 1] = source[item] or Q.todo
    if reclaimed then q.reclaimed = true end
    w_out[#w_out + 1] = now_text
    w_out[#w_out + 1] = item
    w_claims[#w_claims + 1] = item
    local n = new_attempts[item]
    local part = origin[item]
    local key = reclaimed and -n or n
    if part then key = key .. ' ' .. part end
    local records = q.records
    local record = records and records[key]
    if not record then
      record = q.record .. int_text(n) .. (part and (',"q":' .. cjson.encode(part)) or '')
        .. (reclaimed and ',"r":1}' or '}')
      if records then records[key] = record end
    end
    w_claims[#w_claims + 1] = record
    w_dl[q.d] = (w_dl[q.d] or 0) + 1
  end
  c.cursor, c.out_n = cursor, c.out_n + #items
end

-- Score decay (docs/queue-engine.md): items taken back from their claims (decoded records
-- `olds`), each with its score (1 when nothing is stored) multiplied by the factor, fail below
-- the threshold; the others wait again in the queue part they were claimed from (the record's
-- `q`; `todo` for a personal queue's item, or a part no longer in the claim order) with the
-- queue score now (_lib queue_clock) + one day x (1 - score) / score (capped at ten years),
-- plus one day in shuffled queues: as if queued that much later, behind fresher work in
-- proportion to their decay (6 h at 0.8, a day at 0.5, 199 days at 0.005). Each timeline gets
-- a line `decayed:SCORE`.
local DAY = 86400000
local function requeue(c, items, olds)
  if #items == 0 then return end
  local cfg, now, tl = c.cfg, c.now, c.tl
  local raw = bulk_read('HMGET', c.decay, items)
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
      rcall('HDEL', c.decay, item)
      rcall('HSET', c.failed, item, cjson.encode({ t = now, reason = string.format(
        'score %s after %d reclaims, below the decay threshold %s', shown, reclaims, tostring(cfg.decay_threshold)) }))
      leave_claim(tl, nil, item, old, line .. '\n' .. timeline_line(now, 'failed', '', ''))
      stat(c.prefix, now, ST.failed)
    else
      rcall('HSET', c.decay, item, string.format('%.9g %d', score, reclaims))
      local part = (type(old.q) == 'string' and cfg.parts_in_order[old.q]) and old.q or Q.todo
      local wait = math.min(DAY * (1 - score) / score, 3650 * DAY) + (cfg.fifo and 0 or DAY)
      rcall('ZADD', c.prefix .. part, string.format('%d', math.floor(queue_clock() + wait)), item)
      -- Its claim count waits in `attempts` for its next claim.
      leave_claim(tl, c.attempts, item, old, line)
      c.has_attempts = true
    end
  end
end

-- Takes back up to `want` claimed items: the oldest ones, or (ttl) those claimed longer than
-- ttl x their claim count ago. With decay on they go back to their queues (or fail), else
-- they are handed out at once.
local function reclaim(c, want, ttl)
  local now, w_dl, decaying = c.now, c.w_dl, c.cfg.decaying
  local candidates
  if ttl then
    candidates = rcall('ZRANGEBYSCORE', c.out, '-inf', now - ttl, 'LIMIT', 0, want * 4)
  else
    candidates = rcall('ZRANGE', c.out, 0, want - 1)
  end
  local taken, known, olds = {}, {}, {}
  for _, item in ipairs(candidates) do
    if #taken >= want then break end
    local old = decode_claim(rcall('HGET', c.claims, item))
    if not ttl or (tonumber(old.t) or 0) + ttl * (tonumber(old.n) or 1) <= now then
      if old.d then w_dl[old.d] = (w_dl[old.d] or 0) - 1 end
      rcall('ZREM', c.out, item)
      rcall('HDEL', c.claims, item)
      c.out_n = c.out_n - 1
      taken[#taken + 1] = item
      -- Answered as the queue part it first came from (known with decay on), else `todo`.
      c.source[item] = type(old.q) == 'string' and old.q or Q.todo
      if decaying then
        olds[item] = old   -- its lines join the timeline in requeue
      else
        leave_claim(c.tl, nil, item, old, nil)
        known[item] = tonumber(old.n)
      end
    end
  end
  if decaying then
    if #taken > 0 then stat(c.prefix, now, ST.reclaimed, #taken) end
    return requeue(c, taken, olds)
  end
  local ok = screen(c, taken, known)
  distribute(c, ok, 'reclaimed')
  if #ok > 0 then stat(c.prefix, now, ST.reclaimed, #ok) end
end
