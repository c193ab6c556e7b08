"""The floor of this design in Redis: what a claim+done pair costs when the scripts do only the
per-item work that must be atomic and kept (pop the item, record its claim; find the claim,
remove it, add the item to `done`, write its timeline, log the report), at given batch sizes.

Usage: pip install redis; python3 bench/ab/floor.py   Env: RS (batch sizes, "4,32"), ROUNDS (3),
N (pairs per round and batch size, 15000), TRACKER (the binaries whose own claim.lua and done.lua
are measured beside the floor, comma-separated, default target/release/tracker: two builds'
scripts compared in one run, rounds interleaved; an entry may also be a directory holding the
library as `target/release/tracker script library` prints it, `library.lua` (loaded with FUNCTION
LOAD, its claim and done functions called with FCALL), or else composed `claim.lua` and
`done.lua` for EVAL, as `target/release/tracker script claim` prints them; either is called with
the keys of the first binary: a change to a script measured without a build). FLOOR=0 leaves the minimal scripts out (only the tracker's own are called).

INSTR=1 counts instructions instead of time: Redis runs under valgrind's callgrind, and each
figure is the instructions Redis executed per pair over the round's calls (`callgrind_control
-e Ir` before and after; claim and done together, shown as the sum). SPLIT=1 (with INSTR=1)
makes the tracker's scripts' claim calls of a round first, then their done calls, and shows the
two counts apart. Counts do not depend on
what else the machine runs, so two scripts compare exactly in one short run (N=2000 takes a
minute or two). CUT=1 does not check done's replies (for a done.lua cut short). QUEUE: the items queued for
the tracker's own scripts when more than the N served (a big queue, few pairs).

A private redis-server pinned to core 1 (this process to core 0). Two minimal scripts, called as
the tracker calls its own: R claims of one item in one call, then one done call reporting them
(one log entry per report, as done.lua writes). Time is Redis's own (INFO commandstats, EVALSHA
and FCALL usec), so the client's cost does not count; medians of ROUNDS rounds. Beside them, the tracker's own
claim.lua and done.lua, in the same harness: a tracker started on the same Redis claims and
completes one item over HTTP, which loads its library; its functions' names and keys are read off
MONITOR, and the harness calls them with the tracker's argument layout (the fold, which
runs about once per 2,000 reports, is not in these figures). Compare also with the Redis time
per pair of the real scripts, `BENCH_COMMANDSTATS=1 target/release/bench --phases pairs,crowd`
(fcall per pair; 32 warriors give about 4 reports a call, 256 about 28), and with BullMQ's per
job (`bench --phases bullmq`).
"""
import json, os, re, statistics, subprocess, threading, time, urllib.request
from common import ROOT, private_redis, tracker_project, instructions as redis_instructions

RS = [int(x) for x in os.environ.get('RS', '4,32').split(',')]
ROUNDS = int(os.environ.get('ROUNDS', '3'))
N = int(os.environ.get('N', '15000'))
FLOOR = os.environ.get('FLOOR', '1') == '1'
INSTR = os.environ.get('INSTR', '0') == '1'
CUT = os.environ.get('CUT', '0') == '1'
SPLIT = os.environ.get('SPLIT', '0') == '1'
QUEUE = int(os.environ.get('QUEUE', '0'))   # items queued for the tracker's scripts (default N)   # variants cut short: done's replies are not checked
if INSTR:
    os.environ.setdefault('REDIS_WRAP', 'valgrind --tool=callgrind --callgrind-out-file=/dev/null')

CLAIM = """
local now, n = ARGV[1], tonumber(ARGV[2])
local popped = redis.call('ZPOPMIN', KEYS[1], n)
local out, recs, items = {}, {}, {}
for i = 1, #popped, 2 do
  local item, who = popped[i], ARGV[2 + (i + 1) / 2]
  items[#items + 1] = item
  out[#out + 1] = now; out[#out + 1] = item
  recs[#recs + 1] = item
  recs[#recs + 1] = cjson.encode({ d = who, ip = '10.0.0.1', t = tonumber(now), v = '20240101.01', n = 1 })
end
if #items > 0 then
  redis.call('ZADD', KEYS[2], unpack(out))
  redis.call('HSET', KEYS[3], unpack(recs))
end
return items
"""

DONE = """
local now, nrep = ARGV[1], tonumber(ARGV[2])
local items, whos = {}, {}
for r = 1, nrep do whos[r], items[r] = ARGV[1 + 2 * r], ARGV[2 + 2 * r] end
local scores = redis.call('ZMSCORE', KEYS[1], unpack(items))
local recs = redis.call('HMGET', KEYS[2], unpack(items))
local lines = {}
for r = 1, nrep do
  if scores[r] then
    local c = cjson.decode(recs[r])
    lines[#lines + 1] = items[r]
    lines[#lines + 1] = c.t .. ' claimed ' .. c.d .. ' ' .. c.v .. '\\n' .. now .. ' done ' .. whos[r] .. ' -'
    redis.call('XADD', KEYS[5], '*', 't', now, 'd', whos[r], 'items', cjson.encode({ items[r] }), 'bytes', '{"data":1234}')
  end
end
redis.call('ZREM', KEYS[1], unpack(items))
redis.call('HDEL', KEYS[2], unpack(items))
redis.call('SADD', KEYS[3], unpack(items))
local old = redis.call('HMGET', KEYS[4], unpack(items))
redis.call('HSET', KEYS[4], unpack(lines))
return #lines / 2
"""

proc, r = private_redis()
subprocess.run(['taskset', '-pc', '1', str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
os.sched_setaffinity(0, {0})
TRACKERS = os.environ.get('TRACKER', os.path.join(ROOT, 'target/release/tracker')).split(',')
sock = r.connection_pool.connection_kwargs['path']
env = dict(os.environ, REDIS_URL=f'redis+unix://{sock}', TRACKER_DATA_DIR=os.path.dirname(sock))
port = 20000 + os.getpid() % 20000
env['TRACKER_LISTEN'] = f'127.0.0.1:{port}'


def project(tracker, slug, n):
    tracker_project(tracker, env, os.path.dirname(sock), slug, n)


def post(path, body):
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=json.dumps(body).encode(),
                                 headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read().decode()


def monitors():
    """The clients in MONITOR mode (flag O)."""
    return [c for c in r.client_list() if 'O' in c.get('flags', '')]


def probe(tracker, slug):
    """The SHAs and keys of `tracker`'s claim and done scripts: one claim and one done over HTTP,
    seen by MONITOR."""
    project(tracker, slug, 10)
    server = subprocess.Popen([tracker, 'serve'], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=1)
            break
        except Exception:
            time.sleep(0.05)
    seen = []
    monitor = r.monitor()
    conn = monitor.__enter__()

    def watch():
        while True:
            try:
                seen.append(conn.next_command()['command'])
            except Exception:
                return
    threading.Thread(target=watch, daemon=True).start()
    time.sleep(0.5)
    body = {'downloader': 'probe', 'api_version': '2', 'version': '20240101.01'}
    item = json.loads(post(f'/{slug}/request', body))['item_name']
    post(f'/{slug}/done', {'downloader': 'probe', 'version': '20240101.01', 'item': item, 'bytes': {'data': 1}})
    time.sleep(0.5)
    server.kill()
    server.wait()
    # MONITOR slows every command down (Redis formats each one for it): closed, and gone from
    # Redis, before anything is timed or counted. A slow Redis (under valgrind) may keep it.
    conn.connection.disconnect()
    deadline = time.time() + 30
    while monitors():
        for c in monitors():
            r.client_kill_filter(_id=c['id'])
        assert time.time() < deadline, 'a MONITOR client stays attached'
        time.sleep(0.05)
    # The argument layout: 2 from `8889644` on (a claim request carries its record's head, a
    # report its bytes as JSON), else 1.
    real = {'layout': 1}
    for line in seen:
        parts = line.split(' ')
        if parts[0].upper() in ('EVALSHA', 'FCALL') and slug in line:
            nkeys = int(parts[2])
            keys = parts[3:3 + nkeys]
            # The fold has 14 keys too; done's first is the project's `meta`, the fold's `stats`.
            name = 'claim' if nkeys == 12 else 'done' if nkeys == 14 and keys[0].endswith(':meta') else None
            if name == 'claim' and ',"n":' in line:
                real['layout'] = 2
            if name:
                called = parts[1] if parts[0].upper() == 'EVALSHA' else 'fcall:' + parts[1]
                real[name] = (called, [k.replace(slug, '{slug}') for k in keys])
    assert {'claim', 'done'} <= set(real), seen
    return real


def lab(directory, like, k):
    """The library, or composed claim.lua and done.lua, from `directory`, called as `like` calls
    its own. A library is loaded under a name of its own (its hash suffix replaced by one made
    of `k`): under the binary's name, FUNCTION LOAD REPLACE would replace the binary's library,
    and every entry would measure the last one loaded."""
    real = {'layout': like['layout']}
    library = os.path.join(directory, 'library.lua')
    if os.path.exists(library):
        text = open(library).read()
        suffix = re.search(r'name=tracker_([0-9a-f]+)', text).group(1)
        text = text.replace(suffix, (f'{k:x}' * len(suffix))[:len(suffix)])
        r.function_load(text, replace=True)
        for name in ('claim', 'done'):
            function = re.search(rf"function_name = '({name}_[0-9a-f]+)'", text).group(1)
            real[name] = ('fcall:' + function, like[name][1])
        return real
    for name in ('claim', 'done'):
        with open(os.path.join(directory, f'{name}.lua')) as f:
            real[name] = (r.script_load(f.read()), like[name][1])
    return real


reals = []
for k, t in enumerate(TRACKERS):
    reals.append(lab(t, reals[0], k) if os.path.isdir(t) else probe(t, f'probe{k}'))
binary = TRACKERS[0]
r2 = __import__('redis').Redis(unix_socket_path=sock)


def call(called, ks, args):
    """One call of a script: `fcall:FUNCTION`, or a SHA for EVALSHA."""
    if called.startswith('fcall:'):
        return r2.fcall(called[len('fcall:'):], len(ks), *ks, *args)
    return r2.evalsha(called, len(ks), *ks, *args)


def real_claim(real, slug, n):
    """R claims of one item for R downloaders in one call: (the items each got, the call's time)."""
    sha, keys = real['claim']
    ks = [k.replace('{slug}', slug) for k in keys]
    prefix = ks[0][:-len('meta')]
    now = int(time.time() * 1000)
    args = [now, prefix, n]
    for i in range(n):
        ua = 'ArchiveTeam Warrior/1.2'
        if real['layout'] == 2:   # the record's head, as the tracker writes it
            ua = f'{{"t":{now},"d":"dl{i}","v":"20240101.01","ip":"10.0.0.{i % 200}","ua":"{ua}","n":'
        args += [f'dl{i}', f'10.0.0.{i % 200}', ua, '20240101.01', 1, '1', '0', '', '', '0']
    u0 = usec()
    # Each claim's items: a list of names, or (since the claim answers each item's queue part)
    # [names, parts].
    got = [g[0] if g and isinstance(g[0], list) else g
           for g in json.loads(call(sha, ks, args)) if isinstance(g, list)]
    return got, now, usec() - u0


def real_done(real, slug, got, now):
    """One done call reporting the claims of `got`: its time."""
    sha, keys = real['done']
    ks = [k.replace('{slug}', slug) for k in keys]
    prefix = ks[0][:-len('meta')]
    args = [now, prefix, len(got)]
    for i, items in enumerate(got):
        args += [f'dl{i}', '20240101.01', 'ArchiveTeam Warrior/1.2', f'10.0.0.{i % 200}', 'null', '']
        args += (['{"data":1234}'] if real['layout'] == 2 else []) + [1, 'data', '1234', len(items)] + items
    u0 = usec()
    res = json.loads(call(sha, ks, args))
    u1 = usec()
    assert CUT or all(x.get('counted') == len(g) for x, g in zip(res, got)), res[:3]
    return u1 - u0


def real_pair(real, slug, n):
    """R claims of one item for R downloaders in one call, then one done call reporting them."""
    got, now, c = real_claim(real, slug, n)
    return c, real_done(real, slug, got, now), sum(map(len, got))


claim_sha, done_sha = r.script_load(CLAIM), r.script_load(DONE)
keys = lambda slug: [f'f:{{{slug}}}:{k}' for k in ('todo', 'out', 'claims', 'done', 'timeline', 'log')]
usec = lambda: sum(r.info('commandstats').get(f'cmdstat_{c}', {}).get('usec', 0) for c in ('evalsha', 'fcall'))

instructions = lambda: redis_instructions(proc.pid)


if INSTR:
    usec = lambda: 0
runs = {}
for rnd in range(ROUNDS):
    for n in RS:
        if FLOOR:
            slug = f'r{rnd}b{n}'
            todo, out, claims, done, tl, log = keys(slug)
            pipe = r.pipeline(transaction=False)
            for i in range(0, N, 1000):
                pipe.zadd(todo, {f'{slug}-item-{j}': j for j in range(i, min(i + 1000, N))})
            pipe.execute()
            c_us = d_us = pairs = 0
            ir0 = instructions() if INSTR else 0
            for _ in range(N // n):
                now = int(time.time() * 1000)
                u0 = usec()
                got = r.evalsha(claim_sha, 3, todo, out, claims, now, n, *[f'dl{i}' for i in range(n)])
                u1 = usec()
                args = [now, len(got)]
                for i, item in enumerate(got):
                    args += [f'dl{i}', item]
                assert r.evalsha(done_sha, 5, out, claims, done, tl, log, *args) == len(got)
                u2 = usec()
                c_us, d_us, pairs = c_us + u1 - u0, d_us + u2 - u1, pairs + len(got)
            if INSTR:
                c_us, d_us = instructions() - ir0, 0
            runs.setdefault(('floor', n), []).append((c_us / pairs, d_us / pairs))
        order = list(enumerate(TRACKERS))
        for k, tracker in (order if rnd % 2 == 0 else order[::-1]):
            slug = f'real{k}r{rnd}b{n}'
            project(binary if os.path.isdir(tracker) else tracker, slug, QUEUE or N)
            c_us = d_us = pairs = 0
            ir0 = instructions() if INSTR else 0
            if SPLIT:
                # Every claim call, then every done call: one count for each side.
                calls = [real_claim(reals[k], slug, n)[:2] for _ in range(N // n)]
                ir1 = instructions()
                for got, now in calls:
                    real_done(reals[k], slug, got, now)
                c_us, d_us, pairs = ir1 - ir0, instructions() - ir1, n * (N // n)
            else:
                for _ in range(N // n):
                    # Per claim asked for: the same as per pair while the queue holds enough,
                    # and still a figure for a variant cut short before it hands anything out.
                    c, d, _ = real_pair(reals[k], slug, n)
                    c_us, d_us, pairs = c_us + c, d_us + d, pairs + n
            if INSTR and not SPLIT:
                c_us, d_us = instructions() - ir0, 0
            runs.setdefault((f'ours{k}' if len(TRACKERS) > 1 else 'tracker', n), []).append((c_us / pairs, d_us / pairs))
for (what, n), v in sorted(runs.items()):
    c, d = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
    if INSTR and SPLIT:
        print(f'{what:7}, batch {n:3}: claim {c:9,.0f}, done {d:9,.0f}, sum {c + d:9,.0f} Redis instructions per pair')
    elif INSTR:
        print(f'{what:7}, batch {n:3}: {c:9,.0f} Redis instructions per pair (claim and done)')
    else:
        print(f'{what:7}, batch {n:3}: claim {c:5.1f} µs/pair, done {d:5.1f} µs/pair, sum {c + d:5.1f}')
for k, tracker in enumerate(TRACKERS):
    print(f'ours{k} = {tracker}' if len(TRACKERS) > 1 else f'tracker = {tracker}')
shown = [f'{k}={os.environ[k]!r}' if ' ' in os.environ[k] else f'{k}={os.environ[k]}'
         for k in ('REDIS_ARGS', 'INSTR', 'SPLIT', 'FLOOR', 'CUT', 'QUEUE', 'TRACKER') if k in os.environ and k != 'REDIS_WRAP']
print(f'# command: {" ".join(shown)} RS={",".join(map(str, RS))} ROUNDS={ROUNDS} N={N} python3 bench/ab/floor.py')
proc.terminate()   # SIGTERM: Redis shuts down, and a REDIS_WRAP profiler writes its figures
proc.wait()
