// @ts-check
// An example worker on ./worker.js, with the same settings and behaviour as
// the Go example (examples/workers/go): for each task it posts the task's
// idempotency key and payload to an effect service, then answers with what
// it did. e2e/workers_test.go runs it beside the Go and Python workers.
//
//   YUKTA_URL           the server (default http://127.0.0.1:8080)
//   YUKTA_API_KEY       a key of the role WORKER (empty: a server without keys)
//   WORKER_QUEUES       the queues to take tasks from, comma-separated (default "default")
//   WORKER_NAME         this worker's name in its output (default "typescript")
//   WORKER_CONCURRENCY  tasks at once (default 4)
//   EFFECT_URL          where to post each task's effect (empty: no effect)
//
// SIGTERM or SIGINT stops it gracefully.
import { Worker } from "./worker.js";

const name = process.env.WORKER_NAME || "typescript";
const effectURL = process.env.EFFECT_URL || "";
const queues = (process.env.WORKER_QUEUES || "default").split(",").map((q) => q.trim());

/** @type {import("./worker.js").Handler} */
async function handle(task, signal, log) {
  if (effectURL) {
    const res = await fetch(effectURL, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ key: task.idempotencyKey, taskId: task.taskId, leaseToken: task.leaseToken,
        attempt: task.attempt, queue: task.queue, worker: name, payload: task.payload }),
      signal,
    });
    if (!res.ok) throw new Error(`the effect service answered ${res.status}`); // retryable
  }
  const p = /** @type {{ log?: boolean } | null} */ (task.payload);
  if (p && typeof p === "object" && p.log === true) await log("info", `${name} handled ${task.idempotencyKey}`);
  return { output: { key: task.idempotencyKey, worker: name, attempt: task.attempt, payload: task.payload } };
}

const worker = new Worker({
  url: process.env.YUKTA_URL || "http://127.0.0.1:8080",
  token: process.env.YUKTA_API_KEY || undefined,
  concurrency: Number(process.env.WORKER_CONCURRENCY || "4"),
  handlers: Object.fromEntries(queues.map((q) => [q, handle])),
  onLog: (m) => console.error(`${name}: ${m}`),
});
process.on("SIGTERM", () => worker.stop());
process.on("SIGINT", () => worker.stop());
console.log(`${name}: polling ${queues.join(",")}`);
await worker.run();
console.log(`${name}: stopped`);
