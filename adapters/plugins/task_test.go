package plugins

import (
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/plugin"
)

func TestTaskConfigChecks(t *testing.T) {
	d := task()
	cases := []struct {
		name   string
		config map[string]any
		want   []string // violation paths, in order
	}{
		{"minimal", map[string]any{"queue": "images"}, nil},
		{"no queue", map[string]any{}, []string{"queue"}},
		{"bad queue", map[string]any{"queue": "Images!"}, []string{"queue"}},
		{"queue at its bound", map[string]any{"queue": strings.Repeat("q", 64)}, nil},
		{"queue past its bound", map[string]any{"queue": strings.Repeat("q", 65)}, []string{"queue"}},
		{"heartbeat longer than timeout", map[string]any{"queue": "q", "timeout": "10s", "heartbeatTimeout": "20s"}, []string{"heartbeatTimeout"}},
		{"heartbeat equal to timeout", map[string]any{"queue": "q", "timeout": "10s", "heartbeatTimeout": "10s"}, nil},
		{"heartbeat at its floor", map[string]any{"queue": "q", "heartbeatTimeout": "1s"}, nil},
		{"heartbeat under its floor", map[string]any{"queue": "q", "heartbeatTimeout": "999ms"}, []string{"heartbeatTimeout"}},
		{"timeout at its bound", map[string]any{"queue": "q", "timeout": "24h"}, nil},
		{"timeout past its bound", map[string]any{"queue": "q", "timeout": "24h1s"}, []string{"timeout"}},
		{"unusable schema", map[string]any{"queue": "q", "outputSchema": map[string]any{"type": 12}}, []string{"outputSchema"}},
		{"port twice", map[string]any{"queue": "q", "ports": []any{"a", "a"}}, []string{"ports[1]"}},
		{"default as a port", map[string]any{"queue": "q", "ports": []any{"default"}}, []string{"ports[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := d.Validate(c.config)
			var got []string
			for _, v := range vs {
				got = append(got, v.Path)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("violations: got %v, want paths %v", vs, c.want)
			}
		})
	}
}

func TestTaskReadsItsQueueAndBounds(t *testing.T) {
	d := task()
	got, ok := d.Task(map[string]any{"queue": "images", "timeout": "2m"})
	if !ok || got != (plugin.Task{Queue: "images", Lease: 30 * time.Second, Timeout: 2 * time.Minute}) {
		t.Fatalf("Task: got %+v %v", got, ok)
	}
	if ports := d.Ports(map[string]any{"queue": "q", "ports": []any{"rejected"}}); strings.Join(ports, ",") != "default,rejected" {
		t.Fatalf("ports: %v", ports)
	}
	if retry := d.WithDefaults(map[string]any{"queue": "q"}); retry["retry"] != nil {
		t.Fatalf("retry is an object field without a default of its own: %v", retry["retry"])
	}
	for _, f := range d.Fields {
		if f.Name == "retry" {
			for _, sub := range f.Fields {
				if sub.Name == "maxAttempts" && sub.Default != taskDefaultAttempts {
					t.Fatalf("TASK retries %v times by default, want %d", sub.Default, taskDefaultAttempts)
				}
			}
		}
	}
	if _, ok := manual().Task(nil); ok {
		t.Fatal("MANUAL is not a remote type")
	}
}

func TestTaskSchemasCheckBothWays(t *testing.T) {
	config := map[string]any{"queue": "q",
		"inputSchema":  map[string]any{"type": "object", "required": []any{"name"}},
		"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}, "required": []any{"url"}}}
	r := TaskRunner{}
	if err := r.CheckInput(config, map[string]any{"name": "x"}); err != nil {
		t.Fatalf("a good message: %v", err)
	}
	if err := r.CheckInput(config, map[string]any{"nome": "x"}); err == nil || !strings.Contains(err.Error(), "inputSchema") {
		t.Fatalf("a misspelt message: %v", err)
	}
	if err := r.CheckOutput(config, map[string]any{"url": "https://x"}); err != nil {
		t.Fatalf("a good output: %v", err)
	}
	if err := r.CheckOutput(config, map[string]any{"url": 3}); err == nil || !strings.Contains(err.Error(), "outputSchema") {
		t.Fatalf("a bad output: %v", err)
	}
	if err := r.CheckOutput(map[string]any{"queue": "q"}, 42); err != nil {
		t.Fatalf("no schema takes anything: %v", err)
	}
}
