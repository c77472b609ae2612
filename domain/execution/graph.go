package execution

import "time"

// Edge is one edge of an execution's definition snapshot.
type Edge struct {
	Source, Target, Port string
}

// Graph is the DAG of an execution, indexed for the runtime's questions:
// where does a message on this port go, which nodes feed this one.
type Graph struct {
	order []string            // topological order
	up    map[string][]string // node -> nodes with an edge into it
	down  map[string][]Edge   // node -> its outbound edges
}

// NewGraph indexes nodes (in document order) and edges. The definition was
// validated as acyclic when its session was applied.
func NewGraph(nodes []string, edges []Edge) Graph {
	g := Graph{up: map[string][]string{}, down: map[string][]Edge{}}
	indeg := map[string]int{}
	for _, e := range edges {
		g.up[e.Target] = append(g.up[e.Target], e.Source)
		g.down[e.Source] = append(g.down[e.Source], e)
		indeg[e.Target]++
	}
	var queue []string
	for _, n := range nodes {
		if indeg[n] == 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		g.order = append(g.order, n)
		for _, e := range g.down[n] {
			if indeg[e.Target]--; indeg[e.Target] == 0 {
				queue = append(queue, e.Target)
			}
		}
	}
	return g
}

// Nodes returns the node ids in topological order.
func (g Graph) Nodes() []string { return g.order }

// Targets returns the nodes a message emitted on port reaches.
func (g Graph) Targets(node, port string) []string {
	var out []string
	for _, e := range g.down[node] {
		if e.Port == port {
			out = append(out, e.Target)
		}
	}
	return out
}

// AllTargets returns every node downstream of node by one edge, whatever
// the port (a skipped node passes its input to all of them).
func (g Graph) AllTargets(node string) []string {
	var out []string
	for _, e := range g.down[node] {
		out = append(out, e.Target)
	}
	return out
}

// Ancestors returns every node with a path to node.
func (g Graph) Ancestors(node string) map[string]bool {
	out := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, u := range g.up[n] {
			if !out[u] {
				out[u] = true
				walk(u)
			}
		}
	}
	walk(node)
	return out
}

// Settle ends every live node that no message can reach any more: it holds
// no live work and all the nodes feeding it have ended. Walking in
// topological order lets one call settle a whole finished chain. It returns
// the ids of the nodes it ended.
func Settle(g Graph, nodes map[string]*Node, liveWork map[string]int, at time.Time) []string {
	var changed []string
	for _, id := range g.order {
		n := nodes[id]
		if n == nil || !n.Live() || liveWork[id] > 0 {
			continue
		}
		ready := true
		for _, u := range g.up[id] {
			if un := nodes[u]; un != nil && un.Live() {
				ready = false
				break
			}
		}
		if ready {
			n.Settle(at)
			changed = append(changed, id)
		}
	}
	return changed
}
