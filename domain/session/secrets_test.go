package session_test

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// secretCatalog is catalog plus SEND, a processor with a secret string
// with a length check (like WEBHOOK's secret) and a secret map (like
// secretHeaders).
var secretCatalog = func() testCatalog {
	c := maps.Clone(catalog)
	c["SEND"] = plugin.Descriptor{
		Type: "SEND", Category: plugin.Processor, Description: "Sends with secrets.",
		Fields: []plugin.Field{
			{Name: "key", Type: plugin.String, Secret: true, Description: "at least 16 characters"},
			{Name: "headers", Type: plugin.Object, Values: &plugin.Field{Name: "v", Type: plugin.String}, Description: "plain headers"},
			{Name: "secretHeaders", Type: plugin.Object, Secret: true, Values: &plugin.Field{Name: "v", Type: plugin.String}, Description: "secret headers"},
		},
		CheckFunc: func(c map[string]any) []fault.Violation {
			if s, ok := c["key"].(string); ok && len(s) < 16 {
				return []fault.Violation{{Path: "key", Message: "must be at least 16 characters long"}}
			}
			return nil
		},
	}
	return c
}()

// sendDoc is a session whose SEND node "send" has config.
func sendDoc(config string) []byte {
	return fmt.Appendf(nil, `{"sessionId": "s", "name": "S", "workflows": [{"workflowId": "wf", "nodes": [
		{"nodeId": "start", "type": "MANUAL"}, {"nodeId": "send", "type": "SEND", "config": %s}],
		"edges": [{"source": "start", "target": "send"}]}]}`, config)
}

func parseSend(t *testing.T, config string) session.Session {
	t.Helper()
	s, _, err := session.Parse(sendDoc(config), secretCatalog, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse %s: %v", config, err)
	}
	return s
}

func TestMaskedHidesEachSecretMapValue(t *testing.T) {
	t.Parallel()
	s := parseSend(t, `{"key": "0123456789abcdef", "headers": {"X-A": "a"}, "secretHeaders": {"X-API-Key": "k-secret-1"}}`)
	got := configOf(t, s.Masked(secretCatalog), "wf", "send")
	want := map[string]any{"key": plugin.MaskedValue, "headers": map[string]any{"X-A": "a"}, "secretHeaders": map[string]any{"X-API-Key": plugin.MaskedValue}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Masked config: got %#v, want %#v", got, want)
	}
	if got := configOf(t, s, "wf", "send")["secretHeaders"]; !reflect.DeepEqual(got, map[string]any{"X-API-Key": "k-secret-1"}) {
		t.Errorf("Masked changed its receiver: %#v", got)
	}
}

func TestKeepSecretsOfSecretMaps(t *testing.T) {
	t.Parallel()
	stored := parseSend(t, `{"key": "0123456789abcdef", "secretHeaders": {"X-API-Key": "k-secret-1", "Cookie": "c-secret-2"}}`)

	t.Run("a masked value with a length check passes and is kept", func(t *testing.T) {
		t.Parallel()
		// The document as every read path shows it, sent back unchanged.
		back := parseSend(t, `{"key": "***", "secretHeaders": {"X-API-Key": "***", "Cookie": "***"}}`)
		kept, vs := back.KeepSecrets(&stored, secretCatalog)
		if len(vs) != 0 {
			t.Fatalf("violations: got %s, want none", describe(vs))
		}
		if got, want := configOf(t, kept, "wf", "send"), configOf(t, stored, "wf", "send"); !reflect.DeepEqual(got, want) {
			t.Errorf("kept config: got %#v, want %#v", got, want)
		}
	})
	t.Run("some members kept, one changed, one added, one dropped", func(t *testing.T) {
		t.Parallel()
		next := parseSend(t, `{"key": "***", "secretHeaders": {"X-API-Key": "***", "X-New": "n-secret-3"}}`)
		kept, vs := next.KeepSecrets(&stored, secretCatalog)
		if len(vs) != 0 {
			t.Fatalf("violations: got %s, want none", describe(vs))
		}
		want := map[string]any{"X-API-Key": "k-secret-1", "X-New": "n-secret-3"}
		if got := configOf(t, kept, "wf", "send")["secretHeaders"]; !reflect.DeepEqual(got, want) {
			t.Errorf("secretHeaders: got %#v, want %#v", got, want)
		}
		if got := configOf(t, next, "wf", "send")["secretHeaders"].(map[string]any)["X-API-Key"]; got != plugin.MaskedValue {
			t.Errorf("KeepSecrets changed its receiver: X-API-Key got %v", got)
		}
	})
	t.Run("a masked member with nothing to keep", func(t *testing.T) {
		t.Parallel()
		next := parseSend(t, `{"secretHeaders": {"X-API-Key": "***", "X-Unknown": "***"}}`)
		for _, prev := range []*session.Session{&stored, nil} {
			_, vs := next.KeepSecrets(prev, secretCatalog)
			wantPaths := []string{"workflows[0].nodes[1].config.secretHeaders.X-Unknown"}
			if prev == nil {
				wantPaths = append([]string{"workflows[0].nodes[1].config.secretHeaders.X-API-Key"}, wantPaths...)
			}
			if got := violationPaths(vs); !equalStrings(got, wantPaths) {
				t.Fatalf("prev %v: violation paths: got %q (%s), want %q", prev != nil, got, describe(vs), wantPaths)
			}
			last := vs[len(vs)-1].Message
			for _, s := range []string{`node "send"`, `secret field "secretHeaders" member "X-Unknown"`, `"***"`, "send the real value"} {
				if !strings.Contains(last, s) {
					t.Errorf("message: got %q, want it to contain %q", last, s)
				}
			}
		}
	})
	t.Run("a short real value is still refused, without being repeated", func(t *testing.T) {
		t.Parallel()
		_, _, err := session.Parse(sendDoc(`{"key": "short-k"}`), secretCatalog, session.ParseOptions{})
		if err == nil || !strings.Contains(err.Error(), "at least 16 characters") || strings.Contains(err.Error(), "short-k") {
			t.Errorf("Parse of a short key: got %v, want a refusal that does not repeat the value", err)
		}
	})
}

func violationPaths(vs []fault.Violation) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return out
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// TestParseKeepSecretsInTheSameAnswer: with KeepSecrets, a secret sent back
// masked with nothing stored to keep is reported with every other problem
// of the document, not after them; with a stored session it keeps the value.
func TestParseKeepSecretsInTheSameAnswer(t *testing.T) {
	t.Parallel()
	doc := []byte(strings.Replace(string(sendDoc(`{"key": "***", "headers": {"X-A": 5}}`)), `"name": "S"`, `"name": ""`, 1))
	_, _, err := session.Parse(doc, secretCatalog, session.ParseOptions{KeepSecrets: true})
	checkViolations(t, err, []want{
		{"name", []string{"must not be empty"}},
		{"workflows[0].nodes[1].config.headers.X-A", []string{"must be a string"}},
		{"workflows[0].nodes[1].config.key", []string{`"***"`, "no stored value to keep"}},
	})
	stored := parseSend(t, `{"key": "0123456789abcdef"}`)
	s, _, err := session.Parse(sendDoc(`{"key": "***"}`), secretCatalog, session.ParseOptions{KeepSecrets: true, Stored: &stored})
	if err != nil {
		t.Fatalf("Parse with a stored session: %v", err)
	}
	if got := configOf(t, s, "wf", "send")["key"]; got != "0123456789abcdef" {
		t.Errorf("kept key: got %v, want the stored value", got)
	}
}
