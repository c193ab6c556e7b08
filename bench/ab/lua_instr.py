"""Redis's instructions per call of small Lua scripts, counted by valgrind's callgrind: what a
command, a helper or a way of writing something costs inside a script, exactly, whatever else
the machine runs.

Usage: pip install redis; python3 bench/ab/lua_instr.py SNIPPETS
SNIPPETS holds one script a line, `NAME|CODE`, or `NAME:KEY|CODE` to give it KEYS[1] = KEY
(default `meta`). The lab Redis holds `meta` (a project's 32 settings, a listpack), `meta_table`
(the same as a hash table), `dl` (32 downloaders' counts, a listpack) and `big` (300 of them, a
hash table). ARGV[1..12] are `a0`..`a11`. Each script runs 300 times; an empty script (`return
0`) costs about 25,000 instructions a call, the price of EVALSHA itself. Env N (300).
Example line: `hincr8:dl|for i = 1, 8 do redis.call('HINCRBY', KEYS[1], 'downloader' .. i, '1') end return 0`
"""
import os, sys
os.environ.setdefault('REDIS_WRAP', 'valgrind --tool=callgrind --callgrind-out-file=/dev/null')
from common import instructions, private_redis

META = {'title': 'mtest', 'shuffled': '1', 'banner': '', 'domains': 'data', 'state': 'active',
        'max_attempts': '0', 'fifo': '0', 'done_policy': 'keep', 'backfeed_key': '', 'extra': '{}',
        'bloom_capacity': '1000000', 'rate': '0', 'dl_max_claims': '0', 'shard_pattern': '',
        'offload_keep': '100000', 'auto_block_ttl': '86400', 'queue_high': '2000000',
        'backfeed_shards': '', 'pattern_limits': '[]', 'min_version': '', 'require_token': '0',
        'decay_threshold': '0.005', 'burst': '0', 'claims_limit': '0', 'reclaim_ttl': '0',
        'decay_factor': '0', 'ignore_global_blocks': '0', 'item_pattern': '', 'log_keep': '50000',
        'tags': '', 'segment_items': '50000', 'queues': 'todo,todo:backfeed,todo:secondary,todo:redo'}
N = int(os.environ.get('N', '300'))

proc, r = private_redis()
r.hset('meta', mapping=META)
r.hset('meta_table', mapping=dict(META, _long='x' * 80))   # a value past 64 bytes: a hash table
r.hset('dl', mapping={f'downloader{i}': str(i) for i in range(32)})
r.hset('big', mapping={f'downloader{i}': str(i) for i in range(300)})


try:
    for line in open(sys.argv[1]).read().splitlines():
        if '|' not in line:
            continue
        name, code = line.split('|', 1)
        key = name.split(':', 1)[1] if ':' in name else 'meta'
        sha = r.script_load(code)
        args = [key] + [f'a{i}' for i in range(12)]
        r.evalsha(sha, 1, *args)
        before = instructions(proc.pid)
        for _ in range(N):
            r.evalsha(sha, 1, *args)
        print(f'{name:24} {(instructions(proc.pid) - before) / N:10,.0f} instructions per call')
finally:
    proc.terminate()   # SIGTERM: Redis (and callgrind) stop
    proc.wait()
print(f'# command: python3 bench/ab/lua_instr.py {sys.argv[1]}')
