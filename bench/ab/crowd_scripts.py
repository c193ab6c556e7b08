"""Redis's time per script in a running bench phase, summed by script from SLOWLOG: which of
claim.lua, done.lua, fold.lua and fold_base.lua a pair's Redis time goes to. Start it, then the
bench phase; it waits for the bench's new private Redis, and once `MIN` reports are logged
(XADD calls) it logs every command for `SECS` seconds (a script's time includes its inner
commands) and prints each script's µs per call and per report (the window's XADD count).

With PIN=1 it first moves that Redis to core 1 and every process whose command line matches
`PROCS` (the tracker and the bench) to core 0: Redis's time as it is when nothing shares its
core, the conditions of floor.py and of BullMQ's figure with Redis pinned.

Usage: pip install redis
  PIN=1 PROCS='tracker|bench' python3 bench/ab/crowd_scripts.py &
  TRACKER_BIN=target/release/tracker target/release/bench --phases crowd
Env: PIN (0), PROCS ('tracker|bench'), MIN (2000), SECS (3), SLOWLOG (1; 0: pin only, log
nothing, and leave the figures to the bench).
"""
import collections, glob, os, subprocess, time
import redis

PIN = os.environ.get('PIN', '0') == '1'
PROCS = os.environ.get('PROCS', 'tracker|bench')
MIN, SECS = int(os.environ.get('MIN', '2000')), float(os.environ.get('SECS', '3'))

old = set(glob.glob('/tmp/tracker-bench-*/redis.sock'))
while not (set(glob.glob('/tmp/tracker-bench-*/redis.sock')) - old):
    time.sleep(0.2)
r = redis.Redis(unix_socket_path=(set(glob.glob('/tmp/tracker-bench-*/redis.sock')) - old).pop())
while True:
    try:
        r.ping()
        break
    except redis.exceptions.ConnectionError:
        time.sleep(0.1)


def pin_others():
    """The processes of PROCS (every thread) to core 0, this one too."""
    os.sched_setaffinity(0, {0})
    for pid in subprocess.run(['pgrep', '-f', PROCS], capture_output=True, text=True).stdout.split():
        for task in os.listdir(f'/proc/{pid}/task') if os.path.isdir(f'/proc/{pid}/task') else []:
            try:
                os.sched_setaffinity(int(task), {0})
            except OSError:
                pass


if PIN:
    os.sched_setaffinity(int(r.info('server')['process_id']), {1})
    pin_others()
while r.info('commandstats').get('cmdstat_xadd', {}).get('calls', 0) < MIN:
    time.sleep(0.2)
if PIN:
    pin_others()   # threads started since
if os.environ.get('SLOWLOG', '1') == '0':
    # Only the pinning: the bench's own figures are then Redis's time alone on its core.
    print(f'# redis pinned to core 1, {PROCS} to core 0; no SLOWLOG')
    raise SystemExit(0)
r.config_set('slowlog-max-len', 500000)
r.slowlog_reset()
r.config_set('slowlog-log-slower-than', 0)
time.sleep(SECS)
r.config_set('slowlog-log-slower-than', 10000)
log = r.slowlog_get(500000)
by_sha, reports = collections.defaultdict(lambda: [0, 0]), 0
for e in log:
    cmd = e['command'].split()
    if cmd[0].upper() == b'XADD':
        reports += 1
    elif cmd[0].upper() in (b'EVALSHA', b'FCALL'):
        # FCALL names the script's function (`claim_<hash>`); EVALSHA a SHA.
        a = by_sha[(cmd[1][:14].decode(), cmd[3][:30].decode(errors='replace') if len(cmd) > 3 else '')]
        a[0] += 1
        a[1] += e['duration']
print(f'# {SECS:.0f} s, {reports} reports (XADD), redis {"on core 1 alone" if PIN else "not pinned"}')
for (sha, key), (n, us) in sorted(by_sha.items(), key=lambda kv: -kv[1][1])[:6]:
    print(f'{sha} (first key {key}): {n} calls, {us / n:8.1f} µs/call, {us / max(reports, 1):5.2f} µs/report')
print(f"# command: PIN={int(PIN)} PROCS='{PROCS}' python3 bench/ab/crowd_scripts.py & bench --phases crowd")
