// @ts-check
// A worker for Yukta's TASK nodes, on a client generated from
// api/openapi.yaml (api.d.ts, by openapi-typescript; calls through
// openapi-fetch). Plain ESM JavaScript whose JSDoc types tsc checks
// (`npm run check`), so it runs on Node 20 with no build step.
//
//   import { Worker, permanent } from "./worker.js";
//   const w = new Worker({ url: "http://127.0.0.1:8080", token: key, handlers: {
//     images: async (task, signal) => ({ output: await resize(task.payload, task.idempotencyKey, signal) }),
//   }});
//   process.on("SIGTERM", () => w.stop());
//   await w.run();
//
// Delivery is at least once: send task.idempotencyKey with every side
// effect. A handler's thrown error fails the attempt (retryable, unless
// made with permanent()); the signal it gets aborts when the server says
// the task was cancelled, or when a stop's grace runs out. docs/workers.md.
import createClient from "openapi-fetch";

/** @typedef {import("./api.js").paths} paths */
/** @typedef {import("./api.js").components["schemas"]["Task"]} Task */
/** @typedef {import("./api.js").components["schemas"]["TaskUsage"]} TaskUsage */
/** @typedef {import("./api.js").components["schemas"]["TaskCost"]} TaskCost */

/**
 * What a handler answers: the output, and optionally the port it goes out
 * on and the usage and cost of the work (absent is not zero).
 * @typedef {{ output: unknown, port?: string, usage?: TaskUsage, cost?: TaskCost }} Result
 */

/**
 * A handler runs one task. Throw to fail the attempt.
 * @typedef {(task: Task, signal: AbortSignal, log: (level: "debug" | "info" | "warn" | "error", message: string) => Promise<void>) => Promise<Result>} Handler
 */

/**
 * @typedef {object} Options
 * @property {string} url the server, such as http://127.0.0.1:8080
 * @property {string} [token] a key of the role WORKER, sent as a bearer token
 * @property {Record<string, Handler>} handlers one handler per queue
 * @property {number} [concurrency] tasks at once (default 4)
 * @property {number} [pollWaitSeconds] how long one poll waits (default 20, at most 30)
 * @property {number} [graceMs] how long stop() lets running tasks finish (default 10000)
 * @property {(message: string) => void} [onLog] the worker's own diagnostics
 */

/** The worker's bounds and defaults, declared once. */
export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_POLL_WAIT_SECONDS = 20;
export const MAX_POLL_WAIT_SECONDS = 30;
export const MAX_POLL_TASKS = 100;
export const DEFAULT_GRACE_MS = 10_000;
const HEARTBEAT_FRACTION = 3;
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2_000;
const ANSWER_LIMIT_MS = 5 * 60_000;
// How long a call may take past its own wait before the worker gives up on
// it, so that a server that hangs cannot hold a worker forever.
const CALL_SLACK_MS = 15_000;

const PERMANENT = Symbol("yukta.permanent");

/**
 * Marks an error so that its attempt is not retried: the node fails at once.
 * @param {unknown} err
 * @returns {Error}
 */
export function permanent(err) {
  const e = err instanceof Error ? err : new Error(String(err));
  /** @type {any} */ (e)[PERMANENT] = true;
  return e;
}

/**
 * @param {unknown} err
 * @returns {boolean}
 */
export function isPermanent(err) {
  return typeof err === "object" && err !== null && /** @type {any} */ (err)[PERMANENT] === true;
}

/**
 * @param {number} ms
 * @param {AbortSignal} [signal]
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

export class Worker {
  /** @param {Options} opts */
  constructor(opts) {
    if (!opts.url) throw new Error("worker: url is empty; give the server's address, such as http://127.0.0.1:8080");
    this.queues = Object.keys(opts.handlers).sort();
    if (this.queues.length === 0) throw new Error("worker: no handlers; give one per queue");
    this.handlers = opts.handlers;
    this.concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
    if (!(this.concurrency >= 1)) throw new Error(`worker: concurrency is ${opts.concurrency}; it must be 1 or more`);
    this.wait = opts.pollWaitSeconds ?? DEFAULT_POLL_WAIT_SECONDS;
    if (!(this.wait >= 0 && this.wait <= MAX_POLL_WAIT_SECONDS)) {
      throw new Error(`worker: pollWaitSeconds is ${opts.pollWaitSeconds}; it must be 0 to ${MAX_POLL_WAIT_SECONDS}`);
    }
    this.graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
    this.onLog = opts.onLog ?? (() => {});
    /** @type {Record<string, string>} */
    const headers = {};
    if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
    /** @type {import("openapi-fetch").Client<paths>} */
    this.client = createClient({ baseUrl: opts.url.replace(/\/$/, ""), headers });
    /** Aborted by stop(): ends the poll loop. */
    this.stopping = new AbortController();
    /** Aborted when the grace runs out: aborts the handlers. */
    this.cutoff = new AbortController();
    /** @type {Set<Promise<void>>} */
    this.running = new Set();
  }

  /** Stops polling; run() resolves once the running tasks are done. */
  stop() {
    this.stopping.abort();
  }

  /**
   * Polls and runs tasks until stop(), then lets the running tasks finish
   * within the grace, aborts the rest and waits for them.
   * @returns {Promise<void>}
   */
  async run() {
    let backoff = MIN_BACKOFF_MS;
    while (!this.stopping.signal.aborted) {
      if (this.running.size >= this.concurrency) {
        await Promise.race([...this.running, sleep(MAX_BACKOFF_MS, this.stopping.signal)]);
        continue;
      }
      const max = Math.min(this.concurrency - this.running.size, MAX_POLL_TASKS);
      let tasks;
      try {
        const { data, error, response } = await this.client.POST("/api/worker/v1/poll", {
          body: { queues: this.queues, wait: this.wait, max },
          signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.wait * 1000 + CALL_SLACK_MS)]),
        });
        if (!data) {
          const why = `poll: ${response.status} ${JSON.stringify(error)}`;
          if ([400, 401, 403].includes(response.status)) throw Object.assign(new Error(why), { fatal: true });
          throw new Error(why);
        }
        tasks = data.tasks;
      } catch (err) {
        if (this.stopping.signal.aborted) break;
        if (/** @type {any} */ (err).fatal) {
          await this.finish();
          throw err;
        }
        this.onLog(`${String(err)}; again in ${backoff} ms`);
        await sleep(backoff, this.stopping.signal);
        backoff = Math.min(2 * backoff, MAX_BACKOFF_MS);
        continue;
      }
      backoff = MIN_BACKOFF_MS;
      for (const task of tasks) {
        const p = this.runTask(task).finally(() => this.running.delete(p));
        this.running.add(p);
      }
    }
    await this.finish();
  }

  /** Waits for the running tasks, aborting them when the grace runs out. */
  async finish() {
    const timer = new AbortController();
    const all = Promise.all([...this.running]);
    const ran = await Promise.race([all.then(() => true), sleep(this.graceMs, timer.signal).then(() => false)]);
    timer.abort();
    if (!ran) {
      this.onLog(`the grace of ${this.graceMs} ms ran out; aborting the tasks still running`);
      this.cutoff.abort();
      await all;
    }
  }

  /**
   * Runs one task's handler beside its heartbeats, then answers it.
   * @param {Task} task
   */
  async runTask(task) {
    const ctl = new AbortController();
    const abort = () => ctl.abort(new Error("the stop's grace ran out"));
    this.cutoff.signal.addEventListener("abort", abort, { once: true });
    /** @type {string | undefined} */
    let cancelled;
    const every = Math.max(task.heartbeatTimeoutMs / HEARTBEAT_FRACTION, 50);
    let beating = Promise.resolve();
    const beat = setInterval(() => {
      beating = beating.then(async () => {
        if (cancelled || ctl.signal.aborted) return;
        try {
          const { data, response } = await this.client.POST("/api/worker/v1/tasks/{taskId}/heartbeat", {
            params: { path: { taskId: task.taskId } },
            body: { leaseToken: task.leaseToken },
            signal: AbortSignal.timeout(Math.max(task.heartbeatTimeoutMs, CALL_SLACK_MS)),
          });
          if (data?.cancelled || response.status === 404 || response.status === 409) {
            cancelled = data?.reason ?? `heartbeat answered ${response.status}`;
            ctl.abort(new Error(`the server cancelled the task: ${cancelled}`));
          }
        } catch (err) {
          this.onLog(`heartbeat of task ${task.taskId}: ${String(err)}`);
        }
      });
    }, every);
    /** @type {(level: "debug" | "info" | "warn" | "error", message: string) => Promise<void>} */
    const log = async (level, message) => {
      const { data, error, response } = await this.client.POST("/api/worker/v1/tasks/{taskId}/logs", {
        params: { path: { taskId: task.taskId } },
        body: { leaseToken: task.leaseToken, lines: [{ level, message }] },
      });
      if (!data) throw new Error(`logs of task ${task.taskId}: ${response.status} ${JSON.stringify(error)}`);
    };
    /** @type {Result | undefined} */
    let result;
    /** @type {unknown} */
    let failure;
    try {
      result = await this.handlers[task.queue](task, ctl.signal, log);
    } catch (err) {
      failure = err;
    } finally {
      clearInterval(beat);
      await beating;
      this.cutoff.signal.removeEventListener("abort", abort);
    }
    if (cancelled) {
      this.onLog(`task ${task.taskId} (attempt ${task.attempt}) not answered: cancelled (${cancelled})`);
      return;
    }
    await this.answer(task, result, failure);
  }

  /**
   * Sends complete or fail, again while the server cannot be reached.
   * @param {Task} task
   * @param {Result | undefined} result
   * @param {unknown} failure
   */
  async answer(task, result, failure) {
    const until = Math.min(Date.parse(task.deadline), Date.now() + ANSWER_LIMIT_MS);
    let backoff = MIN_BACKOFF_MS;
    for (;;) {
      try {
        const path = { params: { path: { taskId: task.taskId } }, signal: AbortSignal.timeout(CALL_SLACK_MS) };
        const { response, error } = failure !== undefined || !result
          ? await this.client.POST("/api/worker/v1/tasks/{taskId}/fail", { ...path,
            body: { leaseToken: task.leaseToken, error: String(failure instanceof Error ? failure.message : failure) || "failed", retryable: !isPermanent(failure) } })
          : await this.client.POST("/api/worker/v1/tasks/{taskId}/complete", { ...path,
            body: { leaseToken: task.leaseToken, output: result.output, port: result.port, usage: result.usage, cost: result.cost } });
        if (response.ok) return;
        if (response.status !== 429 && response.status < 500) {
          // 409: the lease is gone; 422: the output does not match the
          // node's outputSchema. Trying again changes nothing.
          this.onLog(`answer of task ${task.taskId} (attempt ${task.attempt}): ${response.status} ${JSON.stringify(error)}`);
          return;
        }
      } catch (err) {
        this.onLog(`answer of task ${task.taskId}: ${String(err)}`);
      }
      if (Date.now() + backoff > until || this.cutoff.signal.aborted) {
        this.onLog(`gave up answering task ${task.taskId} (attempt ${task.attempt})`);
        return;
      }
      await sleep(backoff);
      backoff = Math.min(2 * backoff, MAX_BACKOFF_MS);
    }
  }
}
