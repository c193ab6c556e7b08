#!lua
--[[
  shuffle: gives waiting items of one queue part a random-order score (_lib queue_scorer), for
  projects created before queues were scored so, whose items carry their order of arrival: the
  tracker walks each part of such a project (ZSCAN) through this script, then marks the project
  `shuffled`, from which on claims pop by score. An item no longer in the part is skipped;
  nothing changes state.

  KEYS[1]  qseq  string  last FIFO score given (ms)
  KEYS[2]  meta  hash    fifo
  Derived (same slot): <prefix><queue part>.

  ARGV[1]  the queue part's key
  ARGV[2 ..]  items

  Output: number of items scored (0 in FIFO projects, whose scores are already their order).
  Events: none.
  Uses: no_project, queue_scorer, SET.
]]
local qseq, meta = KEYS[1], KEYS[2]
if rcall('EXISTS', meta) == 0 then no_project() end
local key = ARGV[1]
if rcall('HGET', meta, SET.fifo) == '1' then return 0 end
local score = queue_scorer(qseq, #ARGV - 1, false)
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = score()
  args[#args + 1] = ARGV[i]
end
-- XX: only items still waiting there; CH: count those whose score changed.
local n = 0
for i = 1, #args, 1000 do
  n = n + rcall('ZADD', key, 'XX', 'CH', unpack(args, i, math.min(i + 999, #args)))
end
return n
