"""What a script prelude costs Redis per call: EVALSHA of `return 1` behind each prelude.

Usage: pip install redis; taskset -c 0 python3 bench/ab/prelude_cost.py
A private redis-server pinned to core 1; 20,000 calls per prelude and round, 9 rounds
interleaved; Redis's own time (INFO commandstats, EVALSHA usec per call); medians printed.
The preludes are those of 2026-11-26 (`store::scripts::prelude` and `prelude_for`), copied here.
"""
import redis, statistics, subprocess, tempfile, time

OLD = "-- _prelude: names shared with Rust, generated from keys.rs and the settings codec (store::scripts::prelude).\nlocal Q = { todo = 'todo', backfeed = 'todo:backfeed', secondary = 'todo:secondary', redo = 'todo:redo', personal = 'todo:d:' }\nlocal DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'\nlocal ST = { requests = 'rq', served = 'ok', claimed = 'cl', reclaimed = 'rc', served_reclaimed = 'rs', failed = 'f', done_items = 'i', done_bytes = 'b', round_trip_ms = 'rt', round_trips = 'rn', backfed = 'bf', backfeed_dups = 'bd' }\nlocal K = { dl_chart = 'dlc:', dl_chart_last = 'dlc_last', dl_minute = 'dw:', dl_hour = 'dwh:', minute_stats = 'st:', uniques_dl = 'u:dl:', uniques_ip = 'u:ip:', bloom_layer = 'filter:' }\n"
CLAIM = "-- _prelude: names shared with Rust, generated from keys.rs and the settings codec (store::scripts::prelude).\nlocal Q = { todo = 'todo', personal = 'todo:d:' }\nlocal DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'\nlocal ST = { requests = 'rq', served = 'ok', claimed = 'cl', reclaimed = 'rc', served_reclaimed = 'rs', failed = 'f' }\nlocal K = { minute_stats = 'st:' }\nlocal SET = { title = 'title', min_version = 'min_version', rate = 'rate', burst = 'burst', dl_max_claims = 'dl_max_claims', claims_limit = 'claims_limit', reclaim_ttl = 'reclaim_ttl', max_attempts = 'max_attempts', tags = 'tags', state = 'state', decay_factor = 'decay_factor', decay_threshold = 'decay_threshold', fifo = 'fifo', ignore_global_blocks = 'ignore_global_blocks', require_token = 'require_token', queues = 'queues', shuffled = 'shuffled', pattern_limit = 'pl:' }\nlocal SET_DEFAULT = { state = 'active', decay_threshold = 0.005 }\n"
DONE = "-- _prelude: names shared with Rust, generated from keys.rs and the settings codec (store::scripts::prelude).\nlocal Q = { todo = 'todo', personal = 'todo:d:' }\nlocal DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'\nlocal ST = { done_items = 'i', done_bytes = 'b', round_trip_ms = 'rt', round_trips = 'rn' }\nlocal K = { dl_chart = 'dlc:', dl_chart_last = 'dlc_last', dl_minute = 'dw:', dl_hour = 'dwh:', minute_stats = 'st:', uniques_dl = 'u:dl:', uniques_ip = 'u:ip:' }\nlocal SET = { domains = 'domains', auto_block_ttl = 'auto_block_ttl', queues = 'queues' }\nlocal SET_DEFAULT = { auto_block_ttl = 86400 }\n"
EVERY = "-- _prelude: names shared with Rust, generated from keys.rs and the settings codec (store::scripts::prelude).\nlocal Q = { todo = 'todo', backfeed = 'todo:backfeed', secondary = 'todo:secondary', redo = 'todo:redo', personal = 'todo:d:' }\nlocal DEFAULT_QUEUES = 'todo,todo:backfeed,todo:secondary,todo:redo'\nlocal ST = { requests = 'rq', served = 'ok', claimed = 'cl', reclaimed = 'rc', served_reclaimed = 'rs', failed = 'f', done_items = 'i', done_bytes = 'b', round_trip_ms = 'rt', round_trips = 'rn', backfed = 'bf', backfeed_dups = 'bd' }\nlocal K = { dl_chart = 'dlc:', dl_chart_last = 'dlc_last', dl_minute = 'dw:', dl_hour = 'dwh:', minute_stats = 'st:', uniques_dl = 'u:dl:', uniques_ip = 'u:ip:', bloom_layer = 'filter:' }\nlocal SET = { title = 'title', banner = 'banner', domains = 'domains', item_pattern = 'item_pattern', min_version = 'min_version', rate = 'rate', burst = 'burst', dl_max_claims = 'dl_max_claims', claims_limit = 'claims_limit', reclaim_ttl = 'reclaim_ttl', max_attempts = 'max_attempts', auto_block_ttl = 'auto_block_ttl', bloom_capacity = 'bloom_capacity', backfeed_shards = 'backfeed_shards', shard_pattern = 'shard_pattern', tags = 'tags', offload_keep = 'offload_keep', queue_high = 'queue_high', segment_items = 'segment_items', log_keep = 'log_keep', state = 'state', decay_factor = 'decay_factor', decay_threshold = 'decay_threshold', fifo = 'fifo', ignore_global_blocks = 'ignore_global_blocks', require_token = 'require_token', done_policy = 'done_policy', backfeed_key = 'backfeed_key', extra = 'extra', pattern_limits = 'pattern_limits', queues = 'queues', shuffled = 'shuffled', pattern_limit = 'pl:' }\nlocal SET_DEFAULT = { auto_block_ttl = 86400, bloom_capacity = 1000000, offload_keep = 100000, queue_high = 2000000, segment_items = 50000, log_keep = 50000, state = 'active', decay_threshold = 0.005, done_policy = 'keep' }\n"
PRELUDES = {'none': '', 'before (Q, ST, K whole)': OLD, 'every table whole': EVERY,
            "claim.lua's, cut": CLAIM, "done.lua's, cut": DONE}

d = tempfile.mkdtemp()
p = subprocess.Popen(['taskset', '-c', '1', 'redis-server', '--port', '0', '--unixsocket', d + '/r.sock',
                      '--save', '', '--appendonly', 'no'], stdout=subprocess.DEVNULL)
time.sleep(0.3)
r = redis.Redis(unix_socket_path=d + '/r.sock')
sha = {k: r.script_load(v + 'return 1') for k, v in PRELUDES.items()}


def per_call(h, n=20000):
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(n):
        pipe.evalsha(h, 0)
    pipe.execute()
    s = r.info('commandstats')['cmdstat_evalsha']
    return s['usec'] / s['calls']


runs = {k: [] for k in PRELUDES}
for _ in range(9):
    for k in PRELUDES:
        runs[k].append(per_call(sha[k]))
for k, v in runs.items():
    print(f"{k:26s} {statistics.median(v):.2f} µs per call (runs {', '.join(f'{x:.2f}' for x in v)})")
p.terminate()
