// The tabs of one run: its live view, its journal and its holds, each a
// page of its own with a location shaped like its REST path.
import { path } from "../app/router";

const runTabs = [
  { key: "run", label: "Run", pattern: "/sessions/:sessionId/executions/:executionId" },
  { key: "journal", label: "Journal", pattern: "/sessions/:sessionId/executions/:executionId/journal" },
  { key: "holds", label: "Holds", pattern: "/sessions/:sessionId/executions/:executionId/holds" },
] as const;

export type RunTab = (typeof runTabs)[number]["key"];

export function RunTabs({ current, sessionId, executionId }: { current: RunTab; sessionId: string; executionId: string }) {
  return (
    <nav class="tabs" aria-label="Run">
      <a href={`/sessions/${encodeURIComponent(sessionId)}`}>← {sessionId}</a>
      {runTabs.map((t) => (
        <a key={t.key} href={path(t.pattern, { sessionId, executionId })} aria-current={t.key === current ? "page" : undefined}>
          {t.label}
        </a>
      ))}
    </nav>
  );
}
