--[[
  done/read: the first phase of done.lua: the reports of ARGV, and where each item they name
  is. Each function takes the call's state `c` (done.lua read_call).
]]

local BYTES_MAX = 2 ^ 50

-- The reports, and the distinct items they name (a refused report's items are not looked up).
local function read_reports(c, ARGV)
  local reps, all, named = {}, {}, {}
  local a = 4
  for r = 1, c.nrep do
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

-- Where each item is (`c.state`): 'out', 'done', 'failed', or (looked up per report) a queue
-- part; and the claim record of each claimed one (`c.claim_of`). A claimed item has its record
-- (every script writes and deletes the two together), so the records are read first; `out` is
-- asked only about the items without one (ZMSCORE answers each score as text made by C's float
-- formatting).
local function locate(c, all)
  local state, claim_of = {}, {}
  c.state, c.claim_of = state, claim_of
  local raw = bulk_read('HMGET', c.claims, all)
  local rest = {}
  for i, item in ipairs(all) do
    if raw[i] then
      state[item], claim_of[item] = 'out', raw[i]
    else
      rest[#rest + 1] = item
    end
  end
  if #rest > 0 then
    local scores, left = bulk_read('ZMSCORE', c.out, rest), {}
    for i, item in ipairs(rest) do
      if scores[i] then state[item] = 'out' else left[#left + 1] = item end
    end
    rest = left
  end
  if #rest == 0 then return end
  local isdone, rest2 = bulk_read('SMISMEMBER', c.done, rest), {}
  for i, item in ipairs(rest) do
    if isdone[i] == 1 then state[item] = 'done' else rest2[#rest2 + 1] = item end
  end
  if #rest2 > 0 and rcall('EXISTS', c.failed) == 1 then
    local f = bulk_read('HMGET', c.failed, rest2)
    for i, item in ipairs(rest2) do
      if f[i] then state[item] = 'failed' end
    end
  end
end
