--[[
  done: records R done reports of one project in one atomic step. Per report: every item must
  be known (claimed, queued, failed or done), else nothing of that report changes (404). If
  the reported byte domains differ from the project's, the reporter's IP is blocked until
  now + auto_block_ttl and the report's claimed items go back to `todo` (403). Otherwise the
  items move to `done`, each counted once, and one event is published.

  KEYS[1]  meta          hash    domains, auto_block_ttl, queues
  KEYS[2]  out           zset    claimed items
  KEYS[3]  claims        hash    claim records
  KEYS[4]  done          set     completed items
  KEYS[5]  failed        hash    failed items
  KEYS[6]  attempts      hash    item -> times claimed
  KEYS[7]  dl:claims     hash    downloader -> items held
  KEYS[8]  stats         hash    done_items, done_bytes, pq (items in personal queues)
  KEYS[9]  dl:items      zset    items per downloader
  KEYS[10] dl:bytes      zset    bytes per downloader
  KEYS[11] dl:version    hash    last version per downloader
  KEYS[12] dl:seen       hash    last completion per downloader (ms)
  KEYS[13] domain_bytes  hash    bytes per domain
  KEYS[14] seq           string  event sequence number
  KEYS[15] history       list    recent events, newest first
  KEYS[16] events        channel completion events
  KEYS[17] timeline      hash    item -> JSON transitions
  KEYS[18] blocked:ip    hash    ip -> JSON block entry
  KEYS[19] log           stream  completion log
  KEYS[20] chart         list    "minute items bytes" cumulative, one entry per minute
  Derived (same slot): queue parts, todo:d:<downloader>, st:<day>, dlc:<downloader>,
  u:dl:<day>, u:ip:<day>.

  ARGV[1]  now (ms)
  ARGV[2]  key prefix `ns:{SLUG}:`
  ARGV[3]  history length to keep
  ARGV[4]  completion log length to keep
  ARGV[5]  R, the number of reports
  ARGV[6..] per report: downloader, version, user agent, ip, id (JSON), D, D x (domain, bytes),
            M, M x item

  Output: per report, flattened: 200, counted, duplicates, seq (0 when nothing counted)
                                 404, item (unknown item; nothing changed)
                                 403, 0 (byte domains differ; ip blocked, items released)
  Events: per report that counts anything, the event JSON is pushed on KEYS[15] and published
  on KEYS[16].
]]
local meta, out, claims, done, failed, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local dl_claims, stats, dl_items, dl_bytes = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local dl_version, dl_seen, domain_bytes, seq_key = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local history, events, tl, blocked_ip, log, chart = KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20]
local now, prefix = tonumber(ARGV[1]), ARGV[2]
local history_len, log_len, nrep = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

local s = rcall('HMGET', meta, 'domains', 'auto_block_ttl', 'queues')
local groups = queue_groups(s[3])
local domains = {}
for d in string.gmatch(s[1] or '', '[^,]+') do domains[d] = true end
local block_ttl = (tonumber(s[2]) or 86400) * 1000
local day = math.floor(now / 86400000)
local minute = math.floor(now / 60000)

local function todo_count()
  local n = tonumber(rcall('HGET', stats, 'pq')) or 0
  for _, parts in ipairs(groups) do
    for _, part in ipairs(parts) do n = n + rcall('ZCARD', prefix .. part) end
  end
  return n
end

-- Sets the last point of a cumulative chart list to `value` at this minute.
local function chart_point(key, value)
  local last = rcall('LINDEX', key, -1)
  local point = minute .. ' ' .. value
  if last and string.match(last, '^(%d+)') == tostring(minute) then
    rcall('LSET', key, -1, point)
  else
    rcall('RPUSH', key, point)
  end
end

-- Counts for the events, read once and kept current as reports change them.
local todo_now, out_now, failed_now = todo_count(), rcall('ZCARD', out), rcall('HLEN', failed)
local seen_dl, seen_ip, dl_totals = {}, {}, {}
local chart_value = nil

local result = {}
local a = 6
for _ = 1, nrep do
  local who, version, ua, ip, id = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local ndom = tonumber(ARGV[a + 5])
  local dom_at = a + 6
  local nitems = tonumber(ARGV[dom_at + 2 * ndom])
  local items_at = dom_at + 2 * ndom + 1
  a = items_at + nitems

  -- Where is each item? Checked before any write.
  local where, unknown = {}, nil
  for i = items_at, items_at + nitems - 1 do
    local item = ARGV[i]
    if rcall('ZSCORE', out, item) then where[i] = 'out'
    elseif rcall('SISMEMBER', done, item) == 1 then where[i] = 'done'
    elseif rcall('HEXISTS', failed, item) == 1 then where[i] = 'failed'
    else where[i] = find_in_queues(prefix, groups, item, who) end
    if not where[i] then unknown = item break end
  end

  local mismatch = false
  if next(domains) then
    local seen = 0
    for d = 0, ndom - 1 do
      if domains[ARGV[dom_at + 2 * d]] then seen = seen + 1 else mismatch = true end
    end
    local want = 0
    for _ in pairs(domains) do want = want + 1 end
    if seen ~= want then mismatch = true end
  end

  if unknown then
    result[#result + 1] = 404
    result[#result + 1] = unknown
  elseif mismatch then
    rcall('HSET', blocked_ip, ip, cjson.encode({ reason = 'byte domains do not match the project', by = 'auto',
      t = now, expires = now + block_ttl }))
    for i = items_at, items_at + nitems - 1 do
      local item = ARGV[i]
      if where[i] == 'out' then
        local raw = rcall('HGET', claims, item)
        local claim = raw and cjson.decode(raw) or {}
        if claim.d then rcall('HINCRBY', dl_claims, claim.d, -1) end
        rcall('ZREM', out, item)
        rcall('HDEL', claims, item)
        rcall('ZADD', prefix .. 'todo', 0, item)
        out_now, todo_now = out_now - 1, todo_now + 1
        timeline(tl, item, now, 'released', who, version)
      end
    end
    result[#result + 1] = 403
    result[#result + 1] = 0
  else
    local fresh, claimed_at, dups, rtt = {}, {}, 0, 0
    for i = items_at, items_at + nitems - 1 do
      local item, w = ARGV[i], where[i]
      if w == 'done' or rcall('SISMEMBER', done, item) == 1 then
        dups = dups + 1
      else
        local t0 = 0
        if w == 'out' then
          local raw = rcall('HGET', claims, item)
          local claim = raw and cjson.decode(raw) or {}
          t0 = tonumber(claim.t) or 0
          if claim.d then rcall('HINCRBY', dl_claims, claim.d, -1) end
          rcall('ZREM', out, item)
          rcall('HDEL', claims, item)
          out_now = out_now - 1
          if t0 > 0 then rtt = rtt + (now - t0) end
        elseif w == 'failed' then
          rcall('HDEL', failed, item)
          failed_now = failed_now - 1
        else
          rcall('ZREM', prefix .. w, item)
          todo_now = todo_now - 1
          if string.sub(w, 1, 7) == 'todo:d:' then rcall('HINCRBY', stats, 'pq', -1) end
        end
        rcall('HDEL', attempts, item)
        rcall('SADD', done, item)
        timeline(tl, item, now, 'done', who, version)
        fresh[#fresh + 1] = item
        claimed_at[#claimed_at + 1] = t0
      end
    end
    local seq = 0
    if #fresh > 0 then
      local total = 0
      local dom_json = {}
      for d = 0, ndom - 1 do
        local domain, bytes = ARGV[dom_at + 2 * d], ARGV[dom_at + 2 * d + 1]
        rcall('HINCRBY', domain_bytes, domain, bytes)
        total = total + tonumber(bytes)
        dom_json[#dom_json + 1] = cjson.encode(domain) .. ':' .. bytes
      end
      local total_s = string.format('%d', total)
      local done_items = rcall('HINCRBY', stats, 'done_items', #fresh)
      local done_bytes = rcall('HINCRBY', stats, 'done_bytes', total_s)
      rcall('ZINCRBY', dl_items, #fresh, who)
      local dl_total = rcall('ZINCRBY', dl_bytes, total_s, who)
      rcall('HSET', dl_version, who, version)
      rcall('HSET', dl_seen, who, now)
      stat(prefix, now, 'i', #fresh)
      stat(prefix, now, 'b', total)
      if rtt > 0 then
        stat(prefix, now, 'rt', rtt)
        stat(prefix, now, 'rn', #fresh)
      end
      seen_dl[who] = true
      if ip ~= '' then seen_ip[ip] = true end
      chart_value = done_items .. ' ' .. done_bytes
      dl_totals[who] = string.format('%d', tonumber(dl_total))
      rcall('XADD', log, 'MAXLEN', '~', log_len, '*', 't', now, 'd', who, 'ip', ip, 'ua', ua, 'v', version,
        'items', cjson.encode(fresh), 'claimed', cjson.encode(claimed_at), 'bytes', '{' .. table.concat(dom_json, ',') .. '}',
        'id', id)

      seq = rcall('INCR', seq_key)
      -- Built by hand: cjson would print large integers in exponent form.
      local ev = '{"seq":' .. seq .. ',"time":' .. string.format('%d', now) .. ',"downloader":' .. cjson.encode(who)
        .. ',"items":' .. cjson.encode(fresh) .. ',"bytes":' .. total_s
        .. ',"domain_bytes":{' .. table.concat(dom_json, ',') .. '}'
        .. ',"version":' .. cjson.encode(version) .. ',"user_agent":' .. cjson.encode(ua)
        .. ',"counts":{"todo":' .. todo_now .. ',"out":' .. out_now
        .. ',"done":' .. done_items .. ',"failed":' .. failed_now .. '}}'
      rcall('LPUSH', history, ev)
      rcall('LTRIM', history, 0, history_len - 1)
      rcall('PUBLISH', events, ev)
    end
    result[#result + 1] = 200
    result[#result + 1] = #fresh
    result[#result + 1] = dups
    result[#result + 1] = seq
  end
end
-- Once per call: unique contributors and chart points.
local function uniques(kind, set)
  local members = {}
  for m in pairs(set) do members[#members + 1] = m end
  if #members > 0 then
    local key = prefix .. 'u:' .. kind .. ':' .. day
    rcall('PFADD', key, unpack(members))
    rcall('EXPIRE', key, 31 * 86400)
  end
end
uniques('dl', seen_dl)
uniques('ip', seen_ip)
if chart_value then chart_point(chart, chart_value) end
for who, total in pairs(dl_totals) do chart_point(prefix .. 'dlc:' .. who, total) end
flush_stats(prefix, now)
return result
