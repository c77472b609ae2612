// A workflow drawn as a DAG: laid out once per shape with dagre (cached by
// the nodes and edges, so a live run restyles nodes and never lays out
// again), drawn as SVG. Each node is a button: focus it with Tab, open it
// with Enter or a click.
import dagre from "@dagrejs/dagre";
import { useMemo } from "preact/hooks";

export interface DagNode {
  id: string;
  type: string;
  /** status colours the node (a NodeStatus), absent on a workflow's drawing. */
  status?: string;
  /** detail is a short second line (counters). */
  detail?: string;
  /** flags are short marks: paused, step, skip, breakpoint. */
  flags?: string[];
}

export interface DagEdge {
  from: string;
  to: string;
  port?: string;
}

interface Layout {
  width: number;
  height: number;
  nodes: Map<string, { x: number; y: number }>;
  edges: { from: string; to: string; port?: string; points: { x: number; y: number }[] }[];
}

const W = 168;
const H = 48;
const cache = new Map<string, Layout>();

/** layout places nodes left to right; the result is cached by the graph's shape. */
export function layout(nodes: { id: string }[], edges: DagEdge[]): Layout {
  const sig = nodes.map((n) => n.id).join("\u0000") + "\u0001" + edges.map((e) => `${e.from}>${e.to}:${e.port ?? ""}`).join("\u0000");
  const hit = cache.get(sig);
  if (hit) return hit;
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 56, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: W, height: H });
  edges.forEach((e, i) => {
    if (g.hasNode(e.from) && g.hasNode(e.to)) g.setEdge(e.from, e.to, {}, String(i));
  });
  dagre.layout(g);
  const out: Layout = { width: g.graph().width ?? 0, height: g.graph().height ?? 0, nodes: new Map(), edges: [] };
  for (const n of nodes) {
    const p = g.node(n.id);
    out.nodes.set(n.id, { x: p.x, y: p.y });
  }
  edges.forEach((e, i) => {
    const ed = g.edge({ v: e.from, w: e.to, name: String(i) });
    if (ed) out.edges.push({ ...e, points: ed.points ?? [] });
  });
  if (cache.size > 50) cache.clear();
  cache.set(sig, out);
  return out;
}

/**
 * nodeLabel names a node with the words it shows, in their order (a speech
 * user says what they see; axe's label-content-name-mismatch): its id, its
 * status (shown in words too, so colour is not the only cue), its type with
 * the detail, its flags.
 */
function nodeLabel(n: DagNode): string {
  return `${n.id}${n.status ? " " + n.status : ""} ${n.type}${n.detail ? " · " + n.detail : ""}${n.flags?.length ? " " + n.flags.join(" ") : ""}`;
}

function short(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

export function Dag(props: {
  nodes: DagNode[];
  edges: DagEdge[];
  selected?: string;
  onSelect?: (id: string) => void;
  label: string;
}) {
  const { nodes, edges, selected, onSelect, label } = props;
  const shape = useMemo(() => layout(nodes, edges), [nodes.map((n) => n.id).join(","), edges.length, edges]);
  return (
    <div class="dag" role="group" aria-label={label}>
      <svg width={shape.width} height={shape.height} viewBox={`0 0 ${shape.width} ${shape.height}`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
          </marker>
        </defs>
        {shape.edges.map((e, i) => (
          <g key={i} class="edge">
            <polyline points={e.points.map((p) => `${p.x},${p.y}`).join(" ")} marker-end="url(#arrow)" />
            {e.port && e.port !== "out" && e.points.length > 1 ? (
              <text x={e.points[Math.floor(e.points.length / 2)]!.x} y={e.points[Math.floor(e.points.length / 2)]!.y - 4} class="port">
                {e.port}
              </text>
            ) : null}
          </g>
        ))}
        {nodes.map((n) => {
          const p = shape.nodes.get(n.id);
          if (!p) return null;
          const cls = ["node", n.status ? "s-" + n.status.toLowerCase() : "", selected === n.id ? "selected" : ""].join(" ");
          const open = () => onSelect?.(n.id);
          return (
            <g key={n.id} class={cls} transform={`translate(${p.x - W / 2},${p.y - H / 2})`} role="button" tabindex={0}
              aria-label={nodeLabel(n)} aria-pressed={selected === n.id}
              data-node={n.id} data-status={n.status ?? ""}
              onClick={open} onKeyDown={(e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), open())}>
              <rect width={W} height={H} rx="6" />
              <title>{n.id}</title>
              <text x="8" y="18" class="id">{short(n.id, n.status ? 13 : 22)}</text>
              {n.status ? <text x={W - 6} y="18" class="status" text-anchor="end">{" " + n.status}</text> : null}
              <text x="8" y="36" class="type">
                {" " + n.type}
                {n.detail ? " · " + n.detail : ""}
              </text>
              {n.flags?.length ? <text x={W - 6} y="36" class="flags" text-anchor="end">{" " + n.flags.join(" ")}</text> : null}
            </g>
          );
        })}
      </svg>
    </div>
  );
}
