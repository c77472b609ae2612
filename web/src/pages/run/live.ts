// The run view's live state: the execution as the server last answered it,
// kept fresh by its event stream. Events say that something changed; the
// page then re-reads GET …/executions/{eid}, coalesced: at most one read in
// flight and at most one every minGapMs, with one more read after a burst so
// the last answer is never older than the last event. A run writing
// thousands of events a second costs a few reads a second and one render per
// frame (sse.ts batches events per animation frame). The commands seen on
// the stream are folded into a short list of who did what.
import type { Schemas } from "../../app/client";
import type { StreamEvent } from "../../app/sse";

export type Execution = Schemas["Execution"];
export type Envelope = Schemas["EventEnvelope"];

/** coalesce runs read at most once at a time and at most once per minGapMs. */
export function coalesce(read: () => Promise<void>, minGapMs: number, signal: AbortSignal) {
  let inFlight = false;
  let dirty = false;
  let last = 0;
  let timer = 0;
  const fire = () => {
    timer = 0;
    if (signal.aborted) return;
    if (inFlight) {
      dirty = true;
      return;
    }
    const wait = last + minGapMs - performance.now();
    if (wait > 0) {
      timer = window.setTimeout(fire, wait);
      return;
    }
    inFlight = true;
    dirty = false;
    last = performance.now();
    read().finally(() => {
      inFlight = false;
      if (dirty && !signal.aborted) request();
    });
  };
  const request = () => {
    if (timer) return;
    if (inFlight) {
      dirty = true;
      return;
    }
    fire();
  };
  signal.addEventListener("abort", () => timer && clearTimeout(timer));
  return request;
}

/** One command as the stream told it: who sent it, through which door, and what came of it. */
export interface CommandSeen {
  commandId: string;
  seq: number;
  at: string;
  scope: string;
  action: string;
  nodeId?: string;
  mode?: string;
  reason?: string;
  actor: string;
  channel: string;
  outcome?: "applied" | "rejected";
  message?: string;
  resultExecutionIds?: string[];
}

/** What the page keeps from the stream besides the re-reads. */
export interface StreamTally {
  events: number;
  /** lastSeq is the seq of the last event (the stream's order is commit order, not seq order). */
  lastSeq: number;
  seen: Set<number>;
  commands: Map<string, CommandSeen>;
  /** breakpoint hits by node (the latest). */
  hits: Map<string, { seq: number; at: string; itemId: number }>;
  /** node status changes seen, by node (a rough count of attempts and transitions). */
  transitions: Map<string, number>;
}

export function newTally(): StreamTally {
  return { events: 0, lastSeq: 0, seen: new Set(), commands: new Map(), hits: new Map(), transitions: new Map() };
}

const keepCommands = 50;

/** fold adds a batch of events to the tally; it returns whether a re-read is due. */
export function fold(t: StreamTally, batch: StreamEvent[]): boolean {
  let due = false;
  for (const raw of batch) {
    const ev = raw.data as Envelope | undefined;
    if (!ev || typeof ev !== "object" || typeof ev.seq !== "number") continue;
    // A resume never repeats an event, but a page must not count one twice.
    if (t.seen.has(ev.seq)) continue;
    t.seen.add(ev.seq);
    t.lastSeq = ev.seq;
    t.events++;
    due = true;
    switch (ev.type) {
      case "CommandAccepted": {
        const d = ev.data;
        t.commands.set(d.commandId, {
          commandId: d.commandId, seq: ev.seq, at: ev.at, scope: d.scope, action: d.action, nodeId: ev.nodeId || undefined,
          mode: d.mode, reason: d.reason, actor: ev.actor, channel: ev.channel,
        });
        if (t.commands.size > keepCommands) t.commands.delete(t.commands.keys().next().value!);
        break;
      }
      case "CommandApplied":
      case "CommandRejected": {
        const c = t.commands.get(ev.data.commandId);
        if (c) {
          c.outcome = ev.type === "CommandApplied" ? "applied" : "rejected";
          c.message = ev.data.message;
          if (ev.type === "CommandApplied") c.resultExecutionIds = ev.data.resultExecutionIds;
        }
        break;
      }
      case "BreakpointHit":
        t.hits.set(ev.nodeId, { seq: ev.seq, at: ev.at, itemId: ev.data.itemId });
        break;
      case "NodeStatusChanged":
        t.transitions.set(ev.nodeId, (t.transitions.get(ev.nodeId) ?? 0) + 1);
        break;
    }
  }
  return due;
}

export const finished = (s?: string) => s === "SUCCESS" || s === "FAILURE" || s === "STOPPED";
