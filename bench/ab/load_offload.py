"""`tracker items add` into an offloading project, one or more tracker binaries side by side.

Usage: pip install redis; python3 bench/ab/load_offload.py BIN [BIN ...]
Env: N (items, default 3000000), ROUNDS (1), KEEP=1 (also time a `keep` project; or POLICIES,
e.g. `keep` or `offload,keep`), CHECK=1
(then `tracker check` of the project as loaded, timed, with its peak memory), COPY=1 (then
`tracker storage copy` of its segments into a bucket of a private s3s-fs, timed, twice: the
second finds every object there; and `tracker check` of the project reading the bucket alone).

Per binary and round: a private redis-server, the binary's `tracker serve` (its offloader spills
the queue to disk as `items add` fills it), one project with `done_policy=offload`,
`offload_keep=50000`, `queue_high=100000`, `segment_items=10000` (as the memory phase of
`bench`), and `tracker items add` of N names of 32 bytes from a file. Prints seconds and items/s
per run, then the medians; rounds alternate the binaries.
"""
import os, shutil, socket, statistics, subprocess, sys, tempfile, time
from common import private_redis

BINS = sys.argv[1:]
N = int(os.environ.get('N', '3000000'))
ROUNDS = int(os.environ.get('ROUNDS', '1'))
KEEP = os.environ.get('KEEP') == '1'
CHECK = os.environ.get('CHECK') == '1'
COPY = os.environ.get('COPY') == '1'
if not BINS:
    sys.exit(__doc__)

work = tempfile.mkdtemp()
items = os.path.join(work, 'items')
with open(items, 'w') as f:
    f.writelines(f'item-{i:027d}\n' for i in range(N))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def run(binary, policy):
    proc, r = private_redis()
    sock = r.connection_pool.connection_kwargs['path']
    data = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, REDIS_URL=f'redis+unix://{sock}', TRACKER_DATA_DIR=data,
               TRACKER_OFFLOAD_DIR=os.path.join(data, 'offload'),
               TRACKER_LISTEN=f'127.0.0.1:{free_port()}', RUST_LOG='warn')
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([binary, 'project', 'create', 'load'], env=env, check=True, **quiet)
    if policy == 'offload':
        subprocess.run([binary, 'project', 'set', 'load', 'done_policy=offload', 'offload_keep=50000',
                        'queue_high=100000', 'segment_items=10000'], env=env, check=True, **quiet)
    server = subprocess.Popen([binary, 'serve'], env=env, start_new_session=True, **quiet)
    try:
        t = time.monotonic()
        subprocess.run([binary, 'items', 'add', 'load', items], env=env, check=True, **quiet)
        secs = time.monotonic() - t
        if CHECK:
            t = time.monotonic()
            out = subprocess.run(['/usr/bin/time', '-f', '%M', binary, 'check', 'load'], env=env,
                                 capture_output=True, text=True)
            peak = out.stderr.strip().splitlines()[-1]
            verdict = (out.stdout.strip().splitlines() or ['?'])[-1]
            print(f'  check {policy} {binary}: {time.monotonic() - t:.1f} s, {int(peak) / 1024:.0f} MB peak, '
                  f'exit {out.returncode}: {verdict}', flush=True)
        if COPY:
            copy_to_bucket(binary, env, data)
    finally:
        server.terminate()
        server.wait()
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)
    return secs


def copy_to_bucket(binary, env, data):
    """Copies the project's segments into a bucket of a private s3s-fs (timed, and again), then
    checks the project from the bucket alone (timed)."""
    root = os.path.join(data, 's3')
    os.makedirs(os.path.join(root, 'bench'))
    port = free_port()
    s3s = os.path.expanduser(os.environ.get('S3S_FS_BIN', '~/.cargo/bin/s3s-fs'))
    s3 = subprocess.Popen([s3s, '--host', '127.0.0.1', '--port', str(port), '--access-key', 'k',
                           '--secret-key', 'secret', root], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        bucket = (f's3://bench/load?aws_endpoint=http://127.0.0.1:{port}&aws_allow_http=true'
                  '&aws_access_key_id=k&aws_secret_access_key=secret&aws_region=us-east-1')
        here = 'file://' + os.path.join(data, 'offload')
        for what in ('copy', 'again'):
            t = time.monotonic()
            out = subprocess.run([binary, 'storage', 'copy', '--from', here, '--to', bucket],
                                 env=env, capture_output=True, text=True)
            print(f'  {what} {binary}: {time.monotonic() - t:.1f} s, exit {out.returncode}: '
                  f'{out.stdout.strip() or out.stderr.strip()}', flush=True)
        t = time.monotonic()
        out = subprocess.run(['/usr/bin/time', '-f', '%M', binary, 'check', 'load'],
                             env=dict(env, TRACKER_STORAGE=bucket), capture_output=True, text=True)
        peak = out.stderr.strip().splitlines()[-1]
        verdict = (out.stdout.strip().splitlines() or ['?'])[-1]
        print(f'  check from the bucket {binary}: {time.monotonic() - t:.1f} s, '
              f'{int(peak) / 1024:.0f} MB peak, exit {out.returncode}: {verdict}', flush=True)
    finally:
        s3.terminate()
        s3.wait()


policies = os.environ.get('POLICIES', 'offload,keep' if KEEP else 'offload').split(',')
times = {(b, p): [] for b in BINS for p in policies}
for rnd in range(ROUNDS):
    for p in policies:
        for b in BINS:
            secs = run(b, p)
            times[(b, p)].append(secs)
            print(f'round {rnd + 1} {p:8} {b}: {secs:.1f} s, {N / secs:,.0f} items/s', flush=True)
for (b, p), ts in times.items():
    med = statistics.median(ts)
    print(f'median {p:8} {b}: {med:.1f} s, {N / med:,.0f} items/s')
print(f'# command: N={N} ROUNDS={ROUNDS} python3 bench/ab/load_offload.py {" ".join(BINS)}')
shutil.rmtree(work, ignore_errors=True)
