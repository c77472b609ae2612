package session_test

import (
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/session"
)

func TestProbe(t *testing.T) {
	doc := `{"sessionId":"s","name":"n","owner":1,"workflows":[{"workflowId":"w","nodes":[{"nodeId":"a","type":"MANUAL"},{"nodeId":"b","type":"PASS"},{"nodeId":"c","type":"PASS"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"b"},{"source":"a","target":"ghost"}]}]}`
	_, _, err := session.Parse([]byte(doc), catalog, session.ParseOptions{})
	t.Log(err)
	doc2 := `{"sessionId":"s","name":"` + strings.Repeat("é", 200) + `","workflows":[{"workflowId":"w","nodes":[{"nodeId":"a","type":"MANUAL"}]}]}`
	_, _, err = session.Parse([]byte(doc2), catalog, session.ParseOptions{})
	t.Log(err)
	doc3 := `{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"a","type":"MANUAL"},{"nodeId":"c","type":"CALL","config":{"url":"http://x.y","token":null}}],"edges":[{"source":"a","target":"c"}]}]}`
	s, _, err := session.Parse([]byte(doc3), catalog, session.ParseOptions{})
	t.Log(err)
	m := s.Masked(catalog)
	w, _ := m.Workflow("w")
	n, _ := w.Node("c")
	t.Log(n.Config())
	_, vs := m.KeepSecrets(&s, catalog)
	t.Log(vs)
	var z session.Node
	defer func() { t.Log("recovered:", recover()) }()
	t.Log(z.Config())
}
