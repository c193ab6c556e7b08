--[[
  claim/pop: phase 2 of claim.lua, where its items come from: the queue parts popped in claim
  order (each downloader's own queue, reclaims when the claims limit is reached, the queue
  groups, reclaims of claims that took too long). Every function takes the call's state `c`;
  claim/take hands the items out.
]]

-- Pops up to `want` items from queue part `part` (with decay on, noting where each came from).
local function pop(c, part, want)
  local key, items = c.prefix .. part, {}
  if c.cfg.by_score then
    -- ZPOPMIN would also answer each score, which Redis writes with C's float formatting.
    items = rcall('ZRANGE', key, '0', string.format('%d', want - 1))
    if #items > 0 then rcall('ZREMRANGEBYRANK', key, '0', string.format('%d', #items - 1)) end
  else
    items = rcall('ZRANDMEMBER', key, want)
    bulk('ZREM', key, items)
  end
  local source = c.source
  for _, item in ipairs(items) do source[item] = part end
  if c.cfg.decaying then
    local origin = c.origin
    for _, item in ipairs(items) do origin[item] = part end
  end
  return items
end

-- Pattern limit `limiter`'s setting (meta `pl:<name>`, "rate burst"), '' when unset.
local function pattern_limit(c, limiter)
  return rcall('HGET', c.meta, SET.pattern_limit .. limiter) or ''
end

-- Pops up to `want` items from one queue group: the parts share it in proportion to their
-- sizes, a limited part no more than its limiter allows.
local function group_pop(c, parts, want)
  if #parts == 1 and not string.find(parts[1], '#', 1, true) then
    return pop(c, parts[1], want)
  end
  local caps, total = {}, 0
  for i, part in ipairs(parts) do
    local size = rcall('ZCARD', c.prefix .. part)
    local limiter = string.match(part, '#(.+)$')
    local cap = size
    if limiter and size > 0 then
      local rate, burst = string.match(pattern_limit(c, limiter), '^(%S+) (%S+)$')
      cap = math.min(size, (gcra_allow(c.ratelimit, 'p:' .. limiter, tonumber(rate), tonumber(burst), size, c.now)))
    end
    caps[i], total = cap, total + cap
  end
  local items = {}
  if total == 0 then return items end
  for i, part in ipairs(parts) do
    if #items >= want then break end
    local share = math.min(caps[i], math.ceil(want * caps[i] / total), want - #items)
    if share > 0 then
      local popped = pop(c, part, share)
      for _, item in ipairs(popped) do items[#items + 1] = item end
      local limiter = string.match(part, '#(.+)$')
      if limiter then
        local rate = string.match(pattern_limit(c, limiter), '^(%S+)')
        gcra_charge(c.ratelimit, 'p:' .. limiter, tonumber(rate), #popped, c.now)
      end
    end
  end
  return items
end

-- Items for the active requests, from their sources in order.
local function fill(c)
  local cfg = c.cfg
  -- 1. each downloader's own queue
  if (int_of(rcall('HGET', c.stats, 'pq')) or 0) > 0 then
    for i, q in ipairs(c.active) do
      c.cursor = i
      local mine = pop(c, Q.personal .. q.d, q.need)
      if #mine > 0 then
        rcall('HINCRBY', c.stats, 'pq', -#mine)
        distribute(c, screen(c, mine), 'claimed')
      end
    end
    c.cursor = 1
  end
  -- 2. reclaims when the claims limit is reached
  if cfg.claims_limit > 0 and c.out_n >= cfg.claims_limit and short(c, false) > 0 then
    reclaim(c, short(c, false), nil)
  end
  -- 2b. with decay on, claims that took too long go back to their queues first, decayed
  if cfg.decaying and cfg.reclaim_ttl > 0 and short(c, false) > 0 then
    reclaim(c, short(c, false), cfg.reclaim_ttl)
  end
  -- 3. the queues, in order; a group is popped again only if it gave all that was asked
  for _, parts in ipairs(cfg.groups) do
    local want = short(c, true)
    while want > 0 do
      local popped = group_pop(c, parts, want)
      distribute(c, screen(c, popped), 'claimed')
      if #popped < want then break end
      want = short(c, true)
    end
    if short(c, true) == 0 then break end
  end
  -- 4. reclaims of claims that took too long (with decay off)
  if not cfg.decaying and cfg.reclaim_ttl > 0 and short(c, false) > 0 then
    reclaim(c, short(c, false), cfg.reclaim_ttl)
  end
end
