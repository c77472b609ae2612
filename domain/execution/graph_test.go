package execution_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/execution"
)

// diamond: start -> route; route "high" -> fast, route "low" -> slow;
// fast and slow -> done. Nodes are listed out of order on purpose.
var (
	diamondNodes = []string{"done", "slow", "fast", "route", "start"}
	diamondEdges = []execution.Edge{
		{Source: "start", Target: "route", Port: "default"},
		{Source: "route", Target: "fast", Port: "high"},
		{Source: "route", Target: "slow", Port: "low"},
		{Source: "fast", Target: "done", Port: "default"},
		{Source: "slow", Target: "done", Port: "default"},
	}
)

func diamond() execution.Graph { return execution.NewGraph(diamondNodes, diamondEdges) }

func TestGraphOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		nodes []string
		edges []execution.Edge
		want  []string
	}{
		{"chain listed backwards", []string{"c", "b", "a"},
			[]execution.Edge{{Source: "a", Target: "b"}, {Source: "b", Target: "c"}}, []string{"a", "b", "c"}},
		{"independent nodes keep document order", []string{"x", "y", "z"}, nil, []string{"x", "y", "z"}},
		{"two roots", []string{"r2", "j", "r1"},
			[]execution.Edge{{Source: "r1", Target: "j"}, {Source: "r2", Target: "j"}}, []string{"r2", "r1", "j"}},
		{"diamond", diamondNodes, diamondEdges, []string{"start", "route", "fast", "slow", "done"}},
		{"empty", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := execution.NewGraph(tt.nodes, tt.edges)
			if got := g.Nodes(); !slices.Equal(got, tt.want) {
				t.Errorf("Nodes() got %v, want %v", got, tt.want)
			}
			// Whatever the exact order, every edge must point forward.
			pos := map[string]int{}
			for i, n := range g.Nodes() {
				pos[n] = i
			}
			for _, e := range tt.edges {
				if pos[e.Source] >= pos[e.Target] {
					t.Errorf("edge %s->%s: got positions %d, %d, want source first", e.Source, e.Target, pos[e.Source], pos[e.Target])
				}
			}
		})
	}
}

func TestGraphTargets(t *testing.T) {
	t.Parallel()
	g := diamond()
	tests := []struct {
		node, port string
		want       []string
	}{
		{"start", "default", []string{"route"}},
		{"route", "high", []string{"fast"}},
		{"route", "low", []string{"slow"}},
		{"route", "default", nil},
		{"route", "", nil},
		{"done", "default", nil},
		{"nope", "default", nil},
	}
	for _, tt := range tests {
		t.Run(tt.node+"/"+tt.port, func(t *testing.T) {
			t.Parallel()
			if got := g.Targets(tt.node, tt.port); !slices.Equal(got, tt.want) {
				t.Errorf("Targets(%q, %q) got %v, want %v", tt.node, tt.port, got, tt.want)
			}
		})
	}
}

func TestGraphAllTargets(t *testing.T) {
	t.Parallel()
	g := diamond()
	tests := []struct {
		node string
		want []string
	}{
		{"route", []string{"fast", "slow"}}, // every port: what a skipped node sends to
		{"start", []string{"route"}},
		{"done", nil},
		{"nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			t.Parallel()
			if got := g.AllTargets(tt.node); !slices.Equal(got, tt.want) {
				t.Errorf("AllTargets(%q) got %v, want %v", tt.node, got, tt.want)
			}
		})
	}
}

func TestGraphAncestors(t *testing.T) {
	t.Parallel()
	g := diamond()
	tests := []struct {
		node string
		want []string
	}{
		{"done", []string{"fast", "route", "slow", "start"}},
		{"fast", []string{"route", "start"}},
		{"start", nil},
		{"nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			t.Parallel()
			got := slices.Sorted(maps.Keys(g.Ancestors(tt.node)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Ancestors(%q) got %v, want %v", tt.node, got, tt.want)
			}
		})
	}
}

// nodeSpec builds the nodes of a Settle case: phase, messages received and
// control flags per node id.
type nodeSpec struct {
	phase    execution.NodeStatus
	received int64
	skipped  bool
	paused   bool
}

func TestGraphSettle(t *testing.T) {
	t.Parallel()
	chain := execution.NewGraph([]string{"a", "b", "c"}, []execution.Edge{{Source: "a", Target: "b"}, {Source: "b", Target: "c"}})
	run := nodeSpec{phase: execution.NodeRunning, received: 1}
	pend := nodeSpec{phase: execution.NodePending}
	tests := []struct {
		name        string
		g           execution.Graph
		nodes       map[string]nodeSpec
		liveWork    map[string]int
		wantChanged []string
		want        map[string]execution.NodeStatus
	}{
		{"finished chain settles in one call", chain,
			map[string]nodeSpec{"a": run, "b": run, "c": pend}, nil,
			[]string{"a", "b", "c"},
			map[string]execution.NodeStatus{"a": execution.NodeSuccess, "b": execution.NodeSuccess, "c": execution.NodeSkipped}},
		{"live work holds the node and everything after it", chain,
			map[string]nodeSpec{"a": run, "b": run, "c": pend}, map[string]int{"b": 1},
			[]string{"a"},
			map[string]execution.NodeStatus{"a": execution.NodeSuccess, "b": execution.NodeRunning, "c": execution.NodePending}},
		{"live work at the root holds the chain", chain,
			map[string]nodeSpec{"a": run, "b": pend, "c": pend}, map[string]int{"a": 2},
			nil,
			map[string]execution.NodeStatus{"a": execution.NodeRunning, "b": execution.NodePending, "c": execution.NodePending}},
		{"live upstream holds a node with no work", chain,
			map[string]nodeSpec{"a": {phase: execution.NodeRunning, received: 1, paused: true}, "b": pend, "c": pend}, map[string]int{"a": 1},
			nil,
			map[string]execution.NodeStatus{"a": execution.NodePaused, "b": execution.NodePending, "c": execution.NodePending}},
		{"skipped upstream counts as ended", chain,
			map[string]nodeSpec{"a": {phase: execution.NodeSkipped}, "b": run, "c": pend}, nil,
			[]string{"b", "c"},
			map[string]execution.NodeStatus{"a": execution.NodeSkipped, "b": execution.NodeSuccess, "c": execution.NodeSkipped}},
		{"skipped upstream, downstream still has work", chain,
			map[string]nodeSpec{"a": {phase: execution.NodeSkipped}, "b": run, "c": pend}, map[string]int{"b": 1},
			nil,
			map[string]execution.NodeStatus{"a": execution.NodeSkipped, "b": execution.NodeRunning, "c": execution.NodePending}},
		{"stopped upstream counts as ended", chain,
			map[string]nodeSpec{"a": {phase: execution.NodeStopped}, "b": pend, "c": pend}, nil,
			[]string{"b", "c"},
			map[string]execution.NodeStatus{"a": execution.NodeStopped, "b": execution.NodeSkipped, "c": execution.NodeSkipped}},
		{"a node skipped by command settles SKIPPED and frees its downstream", chain,
			map[string]nodeSpec{"a": run, "b": {phase: execution.NodeRunning, received: 1, skipped: true}, "c": run}, nil,
			[]string{"a", "b", "c"},
			map[string]execution.NodeStatus{"a": execution.NodeSuccess, "b": execution.NodeSkipped, "c": execution.NodeSuccess}},
		{"a skip-flagged upstream with work holds its downstream", chain,
			map[string]nodeSpec{"a": run, "b": {phase: execution.NodeRunning, received: 1, skipped: true}, "c": pend}, map[string]int{"b": 1},
			[]string{"a"},
			map[string]execution.NodeStatus{"a": execution.NodeSuccess, "b": execution.NodeSkipped, "c": execution.NodePending}},
		{"untaken branch of a diamond", diamond(),
			map[string]nodeSpec{"start": run, "route": run, "fast": run, "slow": pend, "done": pend}, map[string]int{"done": 1},
			[]string{"start", "route", "fast", "slow"},
			map[string]execution.NodeStatus{"start": execution.NodeSuccess, "route": execution.NodeSuccess, "fast": execution.NodeSuccess,
				"slow": execution.NodeSkipped, "done": execution.NodePending}},
		{"join waits for both branches", diamond(),
			map[string]nodeSpec{"start": run, "route": run, "fast": run, "slow": run, "done": pend}, map[string]int{"slow": 1},
			[]string{"start", "route", "fast"},
			map[string]execution.NodeStatus{"start": execution.NodeSuccess, "route": execution.NodeSuccess, "fast": execution.NodeSuccess,
				"slow": execution.NodeRunning, "done": execution.NodePending}},
		{"ended nodes are not reported", chain,
			map[string]nodeSpec{"a": {phase: execution.NodeSuccess}, "b": {phase: execution.NodeFailure}, "c": {phase: execution.NodeStopped}}, nil,
			nil,
			map[string]execution.NodeStatus{"a": execution.NodeSuccess, "b": execution.NodeFailure, "c": execution.NodeStopped}},
		{"a node missing from the map is skipped and does not block", chain,
			map[string]nodeSpec{"b": run, "c": pend}, nil,
			[]string{"b", "c"},
			map[string]execution.NodeStatus{"b": execution.NodeSuccess, "c": execution.NodeSkipped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nodes := map[string]*execution.Node{}
			for id, s := range tt.nodes {
				n, err := execution.RestoreNode(execution.NodeState{ID: id, Type: "T", Phase: s.phase, Received: s.received,
					Skipped: s.skipped, Paused: s.paused})
				if err != nil {
					t.Fatal(err)
				}
				nodes[id] = n
			}
			changed := execution.Settle(tt.g, nodes, tt.liveWork, t1)
			if !slices.Equal(changed, tt.wantChanged) {
				t.Errorf("Settle changed got %v, want %v", changed, tt.wantChanged)
			}
			for id, want := range tt.want {
				if got := nodes[id].Status(); got != want {
					t.Errorf("node %s: got %s, want %s", id, got, want)
				}
			}
			for _, id := range changed {
				if got := nodes[id].State().EndedAt; !got.Equal(t1) {
					t.Errorf("node %s: got endedAt %v, want %v", id, got, t1)
				}
			}
		})
	}
}
