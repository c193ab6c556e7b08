#!lua
--[[
  project_write: a few plain writes to one project's keys, made only while the project exists
  (its `meta` hash: see _lib must_exist), for the writes the tracker makes outside the item
  scripts (an offloader's state, a lifecycle change, an `uploaded` report, what a backfeed key
  fed). Without the check, such a write landing after a destroy's sweep passed its key would
  leave it behind, for a project made again with the slug to inherit.

  KEYS[1]  meta  hash  the project's settings (only its existence is read)

  ARGV[1]  key prefix `ns:{SLUG}:`
  ARGV[2 ..]  commands, each as: n, then n words (command name, key, arguments); every key
           starts with the prefix, every command is one of WRITES

  Output: an array of the commands' replies, in order; an error when the project does not
  exist (NOPROJECT) or a command is refused (nothing written).
  Uses: no_project.
]]
local WRITES = { HSET = true, HINCRBY = true, HDEL = true, LPUSH = true, LTRIM = true, SET = true, DEL = true }
local prefix = ARGV[1]
local commands, i = {}, 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local words = (n and n >= 2 and n <= 64) and { unpack(ARGV, i + 1, i + n) } or {}
  if #words < 2 or #words ~= n or not WRITES[string.upper(words[1])]
    or string.sub(words[2], 1, #prefix) ~= prefix then
    error({ err = 'ERR project_write: a command that is not a write of the project, at argument ' .. i })
  end
  commands[#commands + 1] = words
  i = i + n + 1
end
if rcall('EXISTS', KEYS[1]) == 0 then no_project() end
local replies = {}
for _, words in ipairs(commands) do replies[#replies + 1] = rcall(unpack(words)) end
return replies
