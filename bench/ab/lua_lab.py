"""Redis time per claim+done pair of the scripts of one or more revisions, at given batch sizes,
and (PROFILE=1) where done.lua's time goes, phase by phase, per report.

Usage: pip install redis; python3 bench/ab/lua_lab.py [REV ...]   (none: the work tree; `.` in
the list: the work tree too). Env: RS (batch sizes, "4,32"), ROUNDS (3), PROFILE (0/1),
TRACKER (the binary that creates the projects and queues their items, default
target/release/tracker).

A private redis-server pinned to core 1 (this process to core 0, so Redis is not preempted by
its client and the in-script times are its own). Each revision's claim.lua and done.lua are
composed as the tracker composes them (the generated prelude, `_lib.lua`, the script) and
called as the tracker calls them: R claims of one item for R downloaders in one call, then one
done call reporting them. Time is Redis's own: INFO commandstats, EVALSHA usec, so the client's
cost does not count. Rounds interleave the revisions; medians printed. With PROFILE=1, done.lua
gets `redis.call('TIME')` marks at the lines in MARKS and the time between marks is summed per
report (each mark costs about 1 µs, which the phase after it carries).

Its prelude and its done call are those of the revisions before the fold (`b7543ca`: done.lua
took 22 keys) and before the settings' prelude (`SET`): it measures those revisions. For the
current scripts, `bench/ab/floor.py` calls the tracker's own, loaded by the tracker itself.
"""
import json, os, statistics, subprocess, sys, time
from common import ROOT, private_redis, source, tracker_project

REVS = [None if r == '.' else r for r in sys.argv[1:]] or [None]
RS = [int(x) for x in os.environ.get('RS', '4,32').split(',')]
ROUNDS = int(os.environ.get('ROUNDS', '3'))
PROFILE = os.environ.get('PROFILE') == '1'
TRACKER = os.environ.get('TRACKER', os.path.join(ROOT, 'target/release/tracker'))
ST = ("requests='rq', served='ok', claimed='cl', reclaimed='rc', served_reclaimed='rs', failed='f', "
      "done_items='i', done_bytes='b', round_trip_ms='rt', round_trips='rn', backfed='bf', backfeed_dups='bd'")
PRELUDE = ("local Q = { todo = 'todo', backfeed = 'todo:backfeed', secondary = 'todo:secondary', "
           "redo = 'todo:redo', personal = 'todo:d:' }\n"
           "local DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'\n"
           f"local ST = {{ {ST} }}\n"
           "local K = { dl_chart = 'dlc:', dl_chart_last = 'dlc_last', dl_minute = 'dw:', dl_hour = 'dwh:', "
           "minute_stats = 'st:', uniques_dl = 'u:dl:', uniques_ip = 'u:ip:', bloom_layer = 'filter:' }\n")
CLAIM_KEYS = ['meta', 'out', 'claims', 'attempts', 'failed', 'dl:claims', 'blocked:ip', 'blocked:dl',
              'ratelimit', 'timeline', 'stats', 'decay']
DONE_KEYS = ['meta', 'out', 'claims', 'done', 'failed', 'attempts', 'dl:claims', 'stats', 'dl:items',
             'dl:bytes', 'dl:version', 'dl:seen', 'domain_bytes', 'seq', 'history', 'events', 'timeline',
             'blocked:ip', 'log', 'chart', 'decay', 'u:month:2026-11']
MARKS = [('parse', 'local dl_base_items'), ('totals before', '-- Phase 1'),
         ('where items are', 'local function todo_count'), ('counts', 'local blocked_now'),
         ('blocks', '-- Phase 2'), ('decide, log, event', '-- Phase 3'),
         ('moves', 'if #evs > 0 then'), ('per-downloader figures', 'local function uniques'),
         ('uniques', 'return cjson.encode(result)')]


def compose(rev, name):
    shebang, body = source(rev, name).split('\n', 1)
    if name == 'done' and PROFILE:
        lines = body.split('\n')
        for what, start in MARKS:
            at = next(i for i, l in enumerate(lines) if l.startswith(start))
            lines.insert(at, f"__mark('{what}')")
        at = next(i for i, l in enumerate(lines) if l.startswith('local meta, out'))
        lines.insert(at, "local __t, __p = redis.call('TIME'), {}\n"
                     "local function __mark(n) local t = redis.call('TIME') "
                     "__p[n] = (__p[n] or 0) + (t[1] - __t[1]) * 1000000 + t[2] - __t[2] __t = t "
                     "for k, v in pairs(__p) do redis.call('HINCRBY', 'lab:profile', k, v) end __p = {} end")
        body = '\n'.join(lines).replace("__mark('uniques')", "__mark('uniques') redis.call('HINCRBY', 'lab:profile', '#reports', nrep)")
    return f'{shebang}\n{PRELUDE}{source(rev, "_lib")}\n{body}'


proc, r = private_redis()
subprocess.run(['taskset', '-pc', '1', str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
os.sched_setaffinity(0, {0})
sock = r.connection_pool.connection_kwargs['path']
env = dict(os.environ, REDIS_URL=f'redis+unix://{sock}', TRACKER_DATA_DIR=os.path.dirname(sock))
key = lambda slug, name: f't:{{{slug}}}:{name}'


def project(slug, n):
    tracker_project(TRACKER, env, os.path.dirname(sock), slug, n)


def claim(sha, slug, n):
    args = [int(time.time() * 1000), key(slug, ''), n]
    for i in range(n):
        args += [f'dl{i}', f'10.0.0.{i % 200}', 'ArchiveTeam Warrior/1.2', '20240101.01', 1, '1', '0', '', '', '0']
    return [g for g in json.loads(r.evalsha(sha, len(CLAIM_KEYS), *[key(slug, k) for k in CLAIM_KEYS], *args))
            if isinstance(g, list)]


def done(sha, slug, got):
    args = [int(time.time() * 1000), key(slug, ''), 2000, 100000, len(got), '2026-11']
    for i, items in enumerate(got):
        args += [f'dl{i}', '20240101.01', 'ArchiveTeam Warrior/1.2', f'10.0.0.{i % 200}', 'null', '', 1, 'data',
                 '1234', len(items)] + items
    res = json.loads(r.evalsha(sha, len(DONE_KEYS), *[key(slug, k) for k in DONE_KEYS], *args))
    assert all(x.get('counted') == len(g) for x, g in zip(res, got)), res[:3]


usec = lambda: r.info('commandstats')['cmdstat_evalsha']['usec']
shas = {rev: {n: r.script_load(compose(rev, n)) for n in ('claim', 'done')} for rev in REVS}
for t, rev in enumerate(REVS):
    for n in RS:
        project(f'lab{t}r{n}', 15000 * ROUNDS)
runs = {}
for rnd in range(ROUNDS):
    for rev in (REVS if rnd % 2 == 0 else REVS[::-1]):
        t = REVS.index(rev)
        for n in RS:
            slug, c_us, d_us, pairs = f'lab{t}r{n}', 0, 0, 0
            for _ in range(15000 // n):
                u0 = usec(); got = claim(shas[rev]['claim'], slug, n); u1 = usec()
                done(shas[rev]['done'], slug, got); u2 = usec()
                c_us, d_us, pairs = c_us + u1 - u0, d_us + u2 - u1, pairs + sum(map(len, got))
            runs.setdefault((rev, n), []).append((c_us / pairs, d_us / pairs))
for (rev, n), v in runs.items():
    c, d = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
    print(f'{rev or "work tree":12} batch {n:3}: claim {c:5.1f} µs/pair, done {d:5.1f} µs/pair, sum {c + d:5.1f}')
if PROFILE:
    prof = {k.decode(): int(v) for k, v in r.hgetall('lab:profile').items()}
    reports = prof.pop('#reports')
    print('done.lua per report, by phase (µs; TIME marks included):')
    for what, _ in MARKS:
        print(f'  {what:24} {prof.get(what, 0) / reports:5.1f}')
print(f'# command: RS={",".join(map(str, RS))} ROUNDS={ROUNDS}{" PROFILE=1" if PROFILE else ""} '
      f'python3 bench/ab/lua_lab.py {" ".join(a for a in sys.argv[1:])}')
proc.kill()
