// BullMQ 5 as the reference for the tracker's Redis time: JOBS jobs added, then WORKERS worker
// processes of CONCURRENCY each take them with a no-op processor, completed jobs kept (BullMQ's
// default), until every job is completed. Prints the jobs/s and the Redis CPU (INFO cpu, user +
// sys, of a Redis that serves nothing else) per job of the processing alone, and a last line
// `bullmq-redis-us-per-job: N` that the bench reads.
//
// Usage: node run.mjs SOCKET [JOBS] [WORKERS] [CONCURRENCY]   (SOCKET: a redis unix socket path)
// With CALLGRIND_PID set (a redis-server run under valgrind's callgrind), it also prints the
// instructions Redis executed per job while the jobs were processed (`callgrind_control -e Ir`).
import { execFileSync, fork } from 'node:child_process';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { createRequire } from 'node:module';

const version = createRequire(import.meta.url)('bullmq/package.json').version;

const [socket, jobs = '200000', workers = '2', concurrency = '32'] = process.argv.slice(2);
const connection = () => new IORedis({ path: socket, maxRetriesPerRequest: null });
const NAME = 'bench';

if (process.env.BULLMQ_WORKER) {
  // A worker process: takes jobs until its parent stops it.
  const worker = new Worker(NAME, async () => {}, {
    connection: connection(),
    concurrency: Number(concurrency),
  });
  worker.on('error', (e) => console.error(`worker: ${e}`));
} else {
  const redis = connection();
  const cpu = async () => {
    const info = await redis.info('cpu');
    const field = (name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)[1]);
    return field('used_cpu_user') + field('used_cpu_sys');
  };
  await redis.flushall();
  const queue = new Queue(NAME, { connection: connection() });
  const total = Number(jobs);
  for (let i = 0; i < total; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(i + 1000, total); j++) batch.push({ name: 'item', data: { item: `item-${j}` } });
    await queue.addBulk(batch);
  }
  // Redis's instructions so far, when it runs under callgrind (CALLGRIND_PID).
  const instructions = () => {
    if (!process.env.CALLGRIND_PID) return 0;
    const text = execFileSync('callgrind_control', ['-e', 'Ir', process.env.CALLGRIND_PID]).toString();
    return text.split('\n').filter((l) => l.trim().startsWith('Th '))
      .reduce((sum, l) => sum + Number(l.trim().split(/\s+/)[2].replaceAll(',', '')), 0);
  };
  const ir0 = instructions();
  const cpu0 = await cpu();
  const t0 = process.hrtime.bigint();
  const children = [];
  for (let w = 0; w < Number(workers); w++) {
    children.push(fork(new URL(import.meta.url).pathname, process.argv.slice(2), {
      env: { ...process.env, BULLMQ_WORKER: '1' },
    }));
  }
  const deadline = Date.now() + 30 * 60 * 1000;
  for (;;) {
    const done = await redis.zcard(`bull:${NAME}:completed`);
    if (done >= total) break;
    if (Date.now() > deadline) throw new Error(`only ${done} of ${total} jobs completed in 30 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const used = (await cpu()) - cpu0;
  const ir = instructions() - ir0;
  // The workers are done with: stopped at once (a graceful close waits out blocking reads).
  for (const child of children) child.kill('SIGKILL');
  const us = (used * 1e6) / total;
  console.log(`bullmq ${version}: ${total} jobs, ${workers} workers x concurrency ${concurrency}: ${(total / seconds).toFixed(0)} jobs/s`);
  console.log(`#   CPU per job: redis ${us.toFixed(1)} µs`);
  if (ir) console.log(`#   Redis instructions per job: ${(ir / total).toFixed(0)}`);
  console.log(`bullmq-redis-us-per-job: ${us.toFixed(1)}`);
  process.exit(0);
}
