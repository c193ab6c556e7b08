"""`tracker migrate` of a universal tracker's database: how long, and how many items a second.

Usage: pip install redis; python3 bench/ab/migrate.py BIN [BIN ...]
Env: VERBOSE=1 (print the command's output), N (items, default 1000000: half queued in `todo`, 40 % done, 10 % claimed), D (downloaders,
default 10000, each with a count, bytes, a version and a chart of 60 points), ROUNDS (1).

Per binary and round: a private redis-server holding one project in the old tracker's layout
(`trackers`, `todo`, `out` + `claims`, `done`, `done_counter`, `downloader_*`, `domain_bytes`,
`chart:*`), another for the tracker, then `tracker migrate --from` the first, timed end to end
(survey, import, `tracker check` of the project). Prints seconds and items/s, then the medians.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time
from common import private_redis

BINS = sys.argv[1:]
N = int(os.environ.get('N', '1000000'))
D = int(os.environ.get('D', '10000'))
ROUNDS = int(os.environ.get('ROUNDS', '1'))
if not BINS:
    sys.exit(__doc__)


def seed(r):
    """The old tracker's keys for project `big`, written in pipelined chunks."""
    r.hset('trackers', 'big', '{"title":"Big","domains":{"data":"data"}}')
    queued, done = N // 2, N * 2 // 5
    claimed = N - queued - done
    p = r.pipeline(transaction=False)
    for start in range(0, N, 10000):
        names = [f'item-{i:09d}' for i in range(start, min(start + 10000, N))]
        todo = [n for i, n in zip(range(start, start + len(names)), names) if i < queued]
        fin = [n for i, n in zip(range(start, start + len(names)), names) if queued <= i < queued + done]
        out = [n for i, n in zip(range(start, start + len(names)), names) if i >= queued + done]
        if todo:
            p.sadd('big:todo', *todo)
        if fin:
            p.sadd('big:done', *fin)
        if out:
            p.zadd('big:out', {n: 1363523640 + i for i, n in enumerate(out)})
            p.hset('big:claims', mapping={n: f'10.0.{i % 250}.{i % 200} dl{i % D}' for i, n in enumerate(out)})
        p.execute()
    p.set('big:done_counter', done)
    for start in range(0, D, 1000):
        who = [f'dl{i}' for i in range(start, min(start + 1000, D))]
        p.hset('big:downloader_count', mapping={w: done // D for w in who})
        p.hset('big:downloader_bytes', mapping={w: 1000 * (done // D) for w in who})
        p.hset('big:downloader_version', mapping={w: '20130317.01' for w in who})
        for w in who:
            p.append(f'big:chart:downloader_bytes:{w}',
                     ''.join(f'2013031712{m:02d}={m * 1000:013x} ' for m in range(60)))
        p.execute()
    p.hset('big:domain_bytes', 'data', 1000 * done)
    p.execute()
    return claimed


def run(binary):
    old_proc, old = private_redis()
    new_proc, new = private_redis()
    work = tempfile.mkdtemp()
    try:
        seed(old)
        env = dict(os.environ, REDIS_URL=f"redis+unix://{new.connection_pool.connection_kwargs['path']}",
                   TRACKER_DATA_DIR=work, RUST_LOG='warn')
        src = f"redis+unix://{old.connection_pool.connection_kwargs['path']}"
        t = time.monotonic()
        out = subprocess.run([binary, 'migrate', '--from', src, '--log-dir', os.path.join(work, 'logs')],
                             env=env, capture_output=True, text=True)
        secs = time.monotonic() - t
        if os.environ.get('VERBOSE') == '1':
            print(out.stdout, out.stderr, sep='\n')
        if out.returncode != 0 or 'check clean' not in out.stdout:
            sys.exit(f'{binary} migrate failed:\n{out.stdout}\n{out.stderr}')
        return secs
    finally:
        for p in (old_proc, new_proc):
            p.kill()
        shutil.rmtree(work, ignore_errors=True)


times = {b: [] for b in BINS}
for rnd in range(ROUNDS):
    for b in BINS:
        s = run(b)
        times[b].append(s)
        print(f'round {rnd + 1} {b}: {s:.1f} s, {N / s:,.0f} items/s', flush=True)
for b in BINS:
    s = statistics.median(times[b])
    print(f'median {b}: {s:.1f} s, {N / s:,.0f} items/s ({N:,} items, {D:,} downloaders)')
print(f'# command: N={N} D={D} ROUNDS={ROUNDS} python3 bench/ab/migrate.py {" ".join(BINS)}')
