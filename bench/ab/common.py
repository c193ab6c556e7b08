"""What the A/B scripts share: a revision's Lua source, and a private redis-server."""
import os, subprocess, tempfile, time
import redis

ROOT = subprocess.check_output(['git', 'rev-parse', '--show-toplevel'], text=True).strip()


def source(rev, name):
    """Script NAME's file at git revision `rev` (None: the work tree): in its slice's folder
    (`server/src/store/SLICE/lua/NAME.lua`) since the store's split, `server/src/store/lua/`
    before. A script split into parts is its file alone."""
    places = [f'server/src/store/lua/{name}.lua'] + [
        f'server/src/store/{s}/lua/{name}.lua'
        for s in ('queue', 'figures', 'people', 'projects', 'fleet', 'offload', 'upkeep')]
    for path in places:
        if rev is None:
            if os.path.exists(os.path.join(ROOT, path)):
                return open(os.path.join(ROOT, path)).read()
            continue
        shown = subprocess.run(['git', '-C', ROOT, 'show', f'{rev}:{path}'],
                               capture_output=True, text=True)
        if shown.returncode == 0:
            return shown.stdout
    raise FileNotFoundError(f'{name}.lua at {rev or "the work tree"}')


def private_redis():
    """A redis-server on a socket of its own, nothing saved: (process, client). Env REDIS_WRAP:
    a command it runs under, split on spaces (`valgrind --tool=callgrind --callgrind-out-file=F`
    counts its instructions by function; Redis exports its symbols). Env REDIS_ARGS: its settings
    (default `--appendonly no`; the tracker's own Redis runs `--appendonly yes --appendfsync
    everysec --hash-max-listpack-entries 64`)."""
    sock = os.path.join(tempfile.mkdtemp(), 'r.sock')
    wrap = os.environ.get('REDIS_WRAP', '').split()
    extra = os.environ.get('REDIS_ARGS', '--appendonly no').split()
    proc = subprocess.Popen(wrap + ['redis-server', '--port', '0', '--unixsocket', sock, '--save', '',
                                    '--dir', os.path.dirname(sock)] + extra, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    client = redis.Redis(unix_socket_path=sock)
    while True:
        try:
            client.ping()
            return proc, client
        except Exception:
            time.sleep(0.05)


def instructions(pid):
    """The instructions a Redis run under valgrind's callgrind (`REDIS_WRAP`) has executed so
    far: callgrind's Ir, summed over its threads."""
    text = subprocess.run(['callgrind_control', '-e', 'Ir', str(pid)], capture_output=True, text=True).stdout
    return sum(int(line.split()[2].replace(',', '')) for line in text.splitlines() if line.strip().startswith('Th '))


def tracker_project(tracker, env, data_dir, slug, n):
    """Project `slug` made with `tracker project create`, its `n` items `SLUG-I` queued with
    `tracker items add` (env: the tracker's REDIS_URL)."""
    subprocess.run([tracker, 'project', 'create', slug], env=env, check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(data_dir, 'items')
    with open(path, 'w') as f:
        f.writelines(f'{slug}-{i}\n' for i in range(n))
    subprocess.run([tracker, 'items', 'add', slug, path], env=env, check=True, stdout=subprocess.DEVNULL)
