package session

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The stored form of a workflow's graph. It mirrors the document format so a
// stored definition reads like the file a user applied.
type definitionDoc struct {
	Nodes []nodeDoc `json:"nodes"`
	Edges []edgeDoc `json:"edges"`
}

type nodeDoc struct {
	NodeID string         `json:"nodeId"`
	Type   string         `json:"type"`
	Name   string         `json:"name,omitempty"`
	Config map[string]any `json:"config"`
}

type edgeDoc struct {
	Source     string `json:"source"`
	Target     string `json:"target"`
	SourcePort string `json:"sourcePort"`
}

// MarshalDefinition encodes the nodes and edges of w for storage and for the
// snapshot an execution keeps.
func MarshalDefinition(w Workflow) ([]byte, error) {
	doc := definitionDoc{Nodes: make([]nodeDoc, len(w.nodes)), Edges: make([]edgeDoc, len(w.edges))}
	for i, n := range w.nodes {
		cfg := n.config
		if cfg == nil {
			cfg = map[string]any{}
		}
		doc.Nodes[i] = nodeDoc{NodeID: n.id, Type: n.typ, Name: n.name, Config: cfg}
	}
	for i, e := range w.edges {
		doc.Edges[i] = edgeDoc{Source: e.source, Target: e.target, SourcePort: e.sourcePort}
	}
	return json.Marshal(doc)
}

// RestoreWorkflow rebuilds a stored workflow from MarshalDefinition's output.
// It checks the encoding, not the rules: those held when it was applied, and
// a plugin removed since must not make stored history unreadable.
func RestoreWorkflow(id, description string, definition []byte) (Workflow, error) {
	dec := json.NewDecoder(bytes.NewReader(definition))
	dec.UseNumber()
	var doc definitionDoc
	if err := dec.Decode(&doc); err != nil {
		return Workflow{}, fmt.Errorf("session: stored definition of workflow %q: %w", id, err)
	}
	w := Workflow{id: id, description: description, nodes: make([]Node, len(doc.Nodes)), edges: make([]Edge, len(doc.Edges))}
	for i, n := range doc.Nodes {
		if n.Config == nil {
			n.Config = map[string]any{}
		}
		w.nodes[i] = Node{id: n.NodeID, typ: n.Type, name: n.Name, config: n.Config}
	}
	for i, e := range doc.Edges {
		w.edges[i] = Edge{source: e.Source, target: e.Target, sourcePort: e.SourcePort}
	}
	return w, nil
}
