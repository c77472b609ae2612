// Reads Yukta's event stream with types generated from api/openapi.yaml by
// openapi-typescript (e2e/tsclient_events_test.go generates ./api.d.ts next
// to a copy of this file and compiles both with tsc --strict). A record's
// data parses as EventEnvelope, and a switch on its type narrows data to that
// event's members; the never check fails to compile when the contract gains
// a type this switch does not handle.
import type { components } from "./api";

export type EventEnvelope = components["schemas"]["EventEnvelope"];

// parseRecord reads the data of one `data: ` line of a stream.
export function parseRecord(line: string): EventEnvelope | undefined {
  if (!line.startsWith("data: ")) {
    return undefined;
  }
  return JSON.parse(line.slice("data: ".length)) as EventEnvelope;
}

// describe says what an event means, using the members of its own type.
export function describe(ev: EventEnvelope): string {
  switch (ev.type) {
    case "ExecutionStarted":
      return `run ${ev.executionId} of ${ev.workflowId} started ${ev.data.status}`;
    case "ExecutionStatusChanged":
      return `run ${ev.executionId}: ${ev.data.from} -> ${ev.data.to}${ev.data.error ? ` (${ev.data.error})` : ""}`;
    case "NodeStatusChanged":
      return `node ${ev.nodeId}: ${ev.data.from} -> ${ev.data.to}, ${ev.data.received} in, ${ev.data.emitted} out, ${ev.data.wallMs} ms`;
    case "BreakpointHit":
      return `node ${ev.nodeId} paused at item ${ev.data.itemId}`;
    case "InputRequested":
      return `input ${ev.data.inputId} asks: ${ev.data.prompt}`;
    case "InputAnswered":
      return `input ${ev.data.inputId} answered through ${ev.data.channel}`;
    case "CommandAccepted":
      return `command ${ev.data.commandId}: ${ev.data.action} on the ${ev.data.scope}`;
    case "CommandApplied":
      return `command ${ev.data.commandId} applied: ${ev.data.message}`;
    case "CommandRejected":
      return `command ${ev.data.commandId} rejected: ${ev.data.message}`;
    case "ReviewRequested":
      return `review ${ev.data.reviewId} asks ${ev.data.supervisorId} by ${ev.data.deadline}`;
    case "ReviewDecided":
      return `review ${ev.data.reviewId}: ${ev.data.move} -> ${ev.data.status}`;
    case "SessionApplied":
      return `session ${ev.sessionId} applied with ${ev.data.workflows.length} workflows`;
    case "SessionDeleted":
      return `session ${ev.sessionId} deleted`;
    case "SupervisorApplied":
      return `supervisor ${ev.data.supervisorId} (${ev.data.engine}) applied`;
    case "SupervisorDeleted":
      return `supervisor ${ev.data.supervisorId} deleted`;
    case "SupervisorCredentialIssued":
      return `credential of ${ev.data.supervisorId} issued until ${ev.data.expiresAt}`;
    case "SupervisorCredentialRevoked":
      return `credential of ${ev.data.supervisorId} revoked`;
    case "APIKeyCreated":
    case "APIKeyRotated":
    case "APIKeyExpiryChanged":
    case "APIKeyRevoked":
      return `API key ${ev.data.name} (${ev.data.role}) ${ev.type.slice("APIKey".length).toLowerCase()} by ${ev.actor}`;
    case "DirectiveApplied":
    case "DirectiveRejected":
      return `directive ${ev.data.key} of ${ev.data.supervisorId} (${ev.data.command.type}): ${ev.data.message}`;
    case "SupervisorLimitReached":
      return `supervisor ${ev.data.supervisorId} reached its ${ev.data.limit} bound (${ev.data.bound}): ${ev.data.message}`;
    case "HoldReleased":
      return `hold of ${ev.data.supervisorId} on ${ev.executionId} released by ${ev.actor}: ${ev.data.message}`;
    case "DelegationRequested":
    case "DelegationAnswered":
      return `delegation ${ev.data.delegationId} (${ev.data.kind}) ${ev.data.from} -> ${ev.data.to}`;
    case "TaskCompleted":
      return `task ${ev.data.itemId} of node ${ev.nodeId} completed by ${ev.actor} (attempt ${ev.data.attempt}, port ${ev.data.port})` +
        (ev.data.usage ? `, ${ev.data.usage.input + ev.data.usage.output} tokens` : ", usage not reported");
    default: {
      const unhandled: never = ev;
      return unhandled;
    }
  }
}

// Reads a stream's lines on standard input and prints what each event means.
declare const process: { stdin: { on(ev: "data", f: (chunk: unknown) => void): void; on(ev: "end", f: () => void): void } };
let text = "";
process.stdin.on("data", (chunk) => {
  text += String(chunk);
});
process.stdin.on("end", () => {
  for (const line of text.split("\n")) {
    const ev = parseRecord(line);
    if (ev) {
      console.log(describe(ev));
    }
  }
});
