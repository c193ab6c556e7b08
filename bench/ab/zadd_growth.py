"""Redis's own cost of adding members as a set grows to 10M (names of 32 bytes), measured
server-side so no client is in the figure: one EVAL adds 10,000 members; each block of 1M is
timed. ZADD into a sorted set (a `keep` project's queue) beside SADD into a set.

Usage: pip install redis; python3 bench/ab/zadd_growth.py
"""
import time
from common import private_redis

SCRIPT = """
local base = tonumber(ARGV[1])
for i = base, base + 9999 do
  local name = string.format('item-%027d', i)
  if ARGV[2] == 'zadd' then redis.call('ZADD', KEYS[1], i, name) else redis.call('SADD', KEYS[1], name) end
end
return 0
"""

proc, r = private_redis()
try:
    add = r.register_script(SCRIPT)
    for cmd in ['zadd', 'sadd']:
        r.flushall()
        rates = []
        for block in range(10):
            t = time.perf_counter()
            for b in range(block * 1_000_000, (block + 1) * 1_000_000, 10_000):
                add(keys=['q'], args=[b, cmd])
            rates.append(1_000_000 / (time.perf_counter() - t))
        print(cmd, ' '.join(f'{x / 1000:.0f}k' for x in rates), 'members/s per block of 1M;',
              'used_memory', r.info('memory')['used_memory_human'])
finally:
    proc.terminate()
print('# command: python3 bench/ab/zadd_growth.py')
