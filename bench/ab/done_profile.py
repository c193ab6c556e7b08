"""Where done.lua's time goes: Redis time per claim+done pair with done.lua cut short at each of
its phases, so the differences between rows are the cost of each phase; then the whole script
less one part (the log entry, the event text, the claim records' decoding) at a time.

Usage: pip install redis; python3 bench/ab/done_profile.py [REV]   (REV: a git revision; default
the work tree). Env: R (requests per call, 8), NDL (distinct downloaders, 1000), ROUNDS (5).

A private redis-server; every variant loads claim.lua whole and done.lua with `do return {} end`
inserted before one of the lines in MARKS (a variant whose mark is missing is skipped). The row
"claim only" runs an empty done; each row's "done" column is its time less that one. Medians of
ROUNDS interleaved rounds of 300 calls each, from INFO commandstats (EVALSHA), so the client's own
cost does not count.
"""
import os, statistics, sys, time
from common import private_redis, source as source_at

REV = sys.argv[1] if len(sys.argv) > 1 else None
R, NDL, ROUNDS = (int(os.environ.get(k, d)) for k, d in (('R', 8), ('NDL', 1000), ('ROUNDS', 5)))
MARKS = [
    ('reads: meta, reports, totals, states, counts', '-- Phase 2'),
    ('+ reports decided (log entry, event text)', '-- Phase 3'),
    ('+ item writes (done, out, claims, timeline)', 'if #evs > 0 then'),
    ('+ totals, charts, history, publish', '-- Once per call'),
    ('+ unique contributors', 'flush_stats(prefix, now)'),
]


def source(name):
    return source_at(REV, name)


proc, r = private_redis()

lib, claim_src, done_src = source('_lib'), source('claim'), source('done')
variants = {'claim only': 'return {}'}
lines = done_src.split('\n')
for label, mark in MARKS:
    at = [i for i, line in enumerate(lines) if line.startswith(mark)]
    if at:
        variants[label] = '\n'.join(lines[:at[0]] + ['do return {} end'] + lines[at[0]:])
variants['whole done.lua'] = done_src
# The whole script less one part: what that part costs.
WITHOUT = [
    ('whole, without the log entry (XADD)', "      rcall('XADD'", "'id', rep.id)", ''),
    ('whole, without the event text', "      evs[#evs + 1] = '{\"seq\":'", 'failed_now)',
     "      evs[#evs + 1] = '{}'"),
    ('whole, without decoding claim records', '          local c = claim_info(', 'done_line)',
     '          local c = { claim = {}, t = 0, lines = done_line }'),
]
for label, start, end, instead in WITHOUT:
    if start in done_src:
        i = done_src.index(start)
        j = done_src.index(end, i) + len(end)
        variants[label] = done_src[:i] + instead + done_src[j:]
shas = {v: (r.script_load(lib + '\n' + claim_src), r.script_load(lib + '\n' + body))
        for v, body in variants.items()}


def pk(slug, n):
    return f't:{{{slug}}}:{n}'


def setup(slug, n):
    r.hset(pk(slug, 'meta'), mapping={'title': slug, 'state': 'active', 'domains': 'data',
                                      'queues': 'todo,todo:backfeed,todo:secondary,todo:redo',
                                      'shuffled': '1'})
    r.zadd(pk(slug, 'todo'), {f'{slug}-{j}': j for j in range(n)})


def run(v, slug, iters):
    claim_keys = [pk(slug, x) for x in ['meta', 'out', 'claims', 'attempts', 'failed', 'dl:claims',
                                         'blocked:ip', 'blocked:dl', 'ratelimit', 'timeline', 'stats']]
    done_keys = [pk(slug, x) for x in ['meta', 'out', 'claims', 'done', 'failed', 'attempts', 'dl:claims',
                                        'stats', 'dl:items', 'dl:bytes', 'dl:version', 'dl:seen',
                                        'domain_bytes', 'seq', 'history', 'events', 'timeline',
                                        'blocked:ip', 'log', 'chart']]
    r.config_resetstat()
    pairs = 0
    for it in range(iters):
        now = int(time.time() * 1000)
        whos = [f'dl{(it * R + k) % NDL}' for k in range(R)]
        args = [now, pk(slug, ''), R]
        for who in whos:
            args += [who, '1.2.3.4', 'Wget/1.0 Warrior', '20240101', 1, '1', '0']
        flat = r.evalsha(shas[v][0], len(claim_keys), *claim_keys, *args)
        got, i = [], 0
        while i < len(flat):
            code, n = flat[i], flat[i + 1]
            i += 2
            got.append([x.decode() for x in flat[i:i + n]] if code == 200 else [])
            i += n if code == 200 else 0
        args = [now, pk(slug, ''), 2000, 100000, sum(1 for g in got if g)]
        for who, items in zip(whos, got):
            if items:
                args += [who, '20240101', 'Wget/1.0 Warrior', '1.2.3.4', 'null', 1, 'data', 1234,
                         len(items)] + items
        r.evalsha(shas[v][1], len(done_keys), *done_keys, *args)
        pairs += sum(len(g) for g in got)
    return r.info('commandstats')['cmdstat_evalsha']['usec'] / pairs


times = {v: [] for v in variants}
for rnd in range(ROUNDS):
    for v in variants:
        slug = f'v{list(variants).index(v)}r{rnd}'
        setup(slug, 300 * R + 10)
        times[v].append(run(v, slug, 300))
base = statistics.median(times['claim only'])
print(f'{"done.lua cut short after, or less a part":48s} {"µs/pair":>8s} {"done":>7s}')
for v in variants:
    m = statistics.median(times[v])
    print(f'{v:48s} {m:8.1f} {m - base:7.1f}')
print(f'# python3 bench/ab/done_profile.py {REV or ""}  (R={R}, NDL={NDL}, ROUNDS={ROUNDS}; '
      f'{REV or "work tree"})')
proc.terminate()
