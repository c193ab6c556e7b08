"""The floor of one item's moves in Redis, commands only: what the state changes every item
needs cost, with no Lua, no claim checks, no log, no figures. Per batch of B items: ZPOPMIN B
from the queue (random scores over a day, as the tracker's), ZADD them to the claimed set,
HSET their claim records (a record as claim.lua writes it), then ZREM and HDEL them and SADD
them to `done`. Time is Redis's own inside each command (INFO commandstats), per item; the
queue holds twice the done set, both at each size of SIZES.

Usage: pip install redis; python3 bench/ab/item_floor.py   Env: SIZES (done set sizes,
"100000,1000000"), B (100), N (items moved per size, 200000).

A private redis-server pinned to core 1 (this process to core 0), as floor.py. Compare with
`bench --phases multi` (Redis CPU per multi=100 item) and with BullMQ's Redis CPU per job
(`bench --phases bullmq`): issue 30's goal for multi=100 is a tenth of a BullMQ job per item.
"""
import os, random, statistics
from common import private_redis

SIZES = [int(x) for x in os.environ.get('SIZES', '100000,1000000').split(',')]
B = int(os.environ.get('B', '100'))
N = int(os.environ.get('N', '200000'))
CMDS = ['zpopmin', 'zadd', 'hset', 'zrem', 'hdel', 'sadd']
RECORD = ('{"d":"downloader-name","ip":"192.0.2.1","t":1764280000000,"ua":"ArchiveTeam Warrior/1.2",'
          '"v":"20240101.01","n":1}')

proc, r = private_redis()
os.sched_setaffinity(proc.pid, {1})
os.sched_setaffinity(0, {0})


def usec(cmd):
    return r.info('commandstats').get(f'cmdstat_{cmd}', {}).get('usec', 0)


for size in SIZES:
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for i in range(0, size * 2, 10000):
        pipe.zadd('q', {f'item-{j:09d}': random.random() * 86400000 for j in range(i, i + 10000)})
    for i in range(0, size, 10000):
        pipe.sadd('done', *[f'old-{j:09d}' for j in range(i, i + 10000)])
    pipe.execute()
    before = {c: usec(c) for c in CMDS}
    moved = 0
    while moved < N:
        got = [m for m, _ in r.zpopmin('q', B)]
        r.zadd('out', {m: 1764280000000 for m in got})
        r.hset('claims', mapping={m: RECORD for m in got})
        r.zrem('out', *got)
        r.hdel('claims', *got)
        r.sadd('done', *got)
        moved += len(got)
    per = {c: (usec(c) - before[c]) / moved for c in CMDS}
    print(f'queue {2 * size}, done {size}, batches of {B}: per item ' +
          ', '.join(f'{c.upper()} {v:.2f}' for c, v in per.items()) + f'; sum {sum(per.values()):.2f} µs')
print(f'# command: SIZES={",".join(map(str, SIZES))} B={B} N={N} python3 bench/ab/item_floor.py')
proc.kill()
