package plugin_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// mapDescriptor has a plain map, a secret map of strings, a secret map of
// integers (to show that masked members skip the value checks), a secret
// string and a type check that sees the whole config.
func mapDescriptor(check func(map[string]any) []fault.Violation) plugin.Descriptor {
	return plugin.Descriptor{
		Type: "T", Category: plugin.Processor, Description: "x",
		Fields: []plugin.Field{
			{Name: "headers", Type: plugin.Object, Values: &plugin.Field{Name: "v", Type: plugin.String}},
			{Name: "secretHeaders", Type: plugin.Object, Secret: true, Values: &plugin.Field{Name: "v", Type: plugin.String}},
			{Name: "secretNumbers", Type: plugin.Object, Secret: true, Values: &plugin.Field{Name: "v", Type: plugin.Integer}},
			{Name: "token", Type: plugin.String, Secret: true},
		},
		CheckFunc: check,
	}
}

func TestMaskHidesEachValueOfASecretMap(t *testing.T) {
	t.Parallel()
	d := mapDescriptor(nil)
	in := obj{"headers": obj{"X-A": "a"}, "secretHeaders": obj{"X-API-Key": "k-123456", "X-Null": nil}, "token": "t"}
	got := d.Mask(in)
	want := obj{"headers": obj{"X-A": "a"}, "secretHeaders": obj{"X-API-Key": plugin.MaskedValue, "X-Null": nil}, "token": plugin.MaskedValue}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Mask: got %#v, want %#v", got, want)
	}
	if in["secretHeaders"].(obj)["X-API-Key"] != "k-123456" {
		t.Errorf("Mask changed its argument: %#v", in)
	}
	// A secret map that is not a map (never valid) is masked whole.
	if got := d.Mask(obj{"secretHeaders": "raw"}); got["secretHeaders"] != plugin.MaskedValue {
		t.Errorf("Mask of a malformed secret map: got %#v, want %q", got["secretHeaders"], plugin.MaskedValue)
	}
}

func TestKeepSecretsPerMember(t *testing.T) {
	t.Parallel()
	d := mapDescriptor(nil)
	prev := obj{"secretHeaders": obj{"X-API-Key": "stored-key", "X-Other": "stored-other"}, "token": "stored-token"}
	cases := []struct {
		name        string
		config      map[string]any
		prev        map[string]any
		want        map[string]any
		wantMissing []string
	}{
		{"masked members take the stored values, new ones stay",
			obj{"secretHeaders": obj{"X-API-Key": plugin.MaskedValue, "X-New": "new"}, "token": plugin.MaskedValue}, prev,
			obj{"secretHeaders": obj{"X-API-Key": "stored-key", "X-New": "new"}, "token": "stored-token"}, nil},
		{"a masked member the stored map lacks is missing",
			obj{"secretHeaders": obj{"X-API-Key": plugin.MaskedValue, "X-New": plugin.MaskedValue}}, prev,
			obj{"secretHeaders": obj{"X-API-Key": "stored-key", "X-New": plugin.MaskedValue}}, []string{"secretHeaders.X-New"}},
		{"no stored config", obj{"secretHeaders": obj{"X-API-Key": plugin.MaskedValue}, "token": plugin.MaskedValue}, nil,
			obj{"secretHeaders": obj{"X-API-Key": plugin.MaskedValue}, "token": plugin.MaskedValue}, []string{"secretHeaders.X-API-Key", "token"}},
		{"the whole map sent masked keeps the whole stored map", obj{"secretHeaders": plugin.MaskedValue}, prev,
			obj{"secretHeaders": obj{"X-API-Key": "stored-key", "X-Other": "stored-other"}}, nil},
		{"names are matched exactly", obj{"secretHeaders": obj{"x-api-key": plugin.MaskedValue}}, prev,
			obj{"secretHeaders": obj{"x-api-key": plugin.MaskedValue}}, []string{"secretHeaders.x-api-key"}},
		{"real values replace stored ones, dropped members are dropped", obj{"secretHeaders": obj{"X-API-Key": "fresh"}}, prev,
			obj{"secretHeaders": obj{"X-API-Key": "fresh"}}, nil},
		{"a stored mask is never kept", obj{"token": plugin.MaskedValue}, obj{"token": plugin.MaskedValue},
			obj{"token": plugin.MaskedValue}, []string{"token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := deepClone(tc.config)
			got, missing := d.KeepSecrets(tc.config, tc.prev)
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("missing: got %q, want %q", missing, tc.wantMissing)
			}
			if len(missing) == 0 && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("KeepSecrets: got %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.config, before) {
				t.Errorf("KeepSecrets changed its argument: got %#v, want %#v", tc.config, before)
			}
		})
	}
}

func TestSecretValuesListsSecretMapMembers(t *testing.T) {
	t.Parallel()
	d := mapDescriptor(nil)
	got := d.SecretValues(obj{
		"headers":       obj{"X-A": "plain"},
		"secretHeaders": obj{"X-B": "bee", "X-A": "ay", "X-M": plugin.MaskedValue, "X-N": nil},
		"token":         "tok",
	})
	if want := []string{"ay", "bee", "tok"}; !slices.Equal(got, want) {
		t.Errorf("SecretValues: got %q, want %q", got, want)
	}
	if got := d.SecretValues(obj{"token": plugin.MaskedValue}); len(got) != 0 {
		t.Errorf("SecretValues of a masked config: got %q, want none", got)
	}
}

func TestValidateSecretMap(t *testing.T) {
	t.Parallel()
	var seen map[string]any
	d := mapDescriptor(func(c map[string]any) []fault.Violation { seen = c; return nil })
	// Values are typed: a non-string header and a non-integer number are
	// refused, each at its own path, without quoting a secret.
	vs := d.Validate(obj{"headers": obj{"X-A": 1}, "secretHeaders": obj{"X-B": true}, "secretNumbers": obj{"n": "seven-secret"}})
	if got, want := paths(vs), []string{"headers.X-A", "secretHeaders.X-B", "secretNumbers.n"}; !slices.Equal(got, want) {
		t.Fatalf("violation paths: got %q (%v), want %q", got, vs, want)
	}
	if strings.Contains(describeAll(vs), "seven-secret") {
		t.Errorf("a violation quotes a secret value: %v", vs)
	}
	// Masked members stand for stored values: no value check runs on them,
	// and the type check still sees them (names set twice stay visible).
	cfg := obj{"secretNumbers": obj{"n": plugin.MaskedValue}, "secretHeaders": obj{"X-B": plugin.MaskedValue}}
	if vs := d.Validate(cfg); len(vs) != 0 {
		t.Fatalf("masked members: got %v, want no violations", vs)
	}
	if got := seen["secretHeaders"]; !reflect.DeepEqual(got, obj{"X-B": plugin.MaskedValue}) {
		t.Errorf("CheckFunc saw secretHeaders %#v, want the masked member", got)
	}
}

func TestCheckRefusesMisplacedValues(t *testing.T) {
	t.Parallel()
	for _, f := range []plugin.Field{
		{Name: "a", Type: plugin.String, Values: &plugin.Field{Type: plugin.String}},
		{Name: "a", Type: plugin.Object, Fields: []plugin.Field{{Name: "x", Type: plugin.String}}, Values: &plugin.Field{Type: plugin.String}},
		{Name: "a", Type: plugin.Object, Values: &plugin.Field{Type: "weird"}},
	} {
		if err := one(f).Check(); err == nil {
			t.Errorf("Check(%+v): got nil, want an error", f)
		}
	}
	if err := one(plugin.Field{Name: "a", Type: plugin.Object, Secret: true, Values: &plugin.Field{Type: plugin.String}}).Check(); err != nil {
		t.Errorf("Check of a secret map: got %v, want nil", err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"https://example.com/a/b", "https://example.com/a/b"},
		{"https://user:hunter2-pass@example.com/x", "https://***@example.com/x"},
		{"https://example.com/x?api_key=k-9876&q=1", "https://example.com/x?api_key=***&q=***"},
		{"https://example.com/x?tok-9876#frag-secret", "https://example.com/x?***#***"},
		// Text a URL parser refuses may still carry a password.
		{"http://user:pa ss@exa mple.com", "http://***@exa mple.com"},
		{"http://user:secret-9876/path@host", "http://***@host"},
		{"user:secret-9876@host", "***@host"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := plugin.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLFieldMessageHidesCredentials(t *testing.T) {
	t.Parallel()
	d := one(plugin.Field{Name: "url", Type: plugin.URL})
	vs := d.Validate(obj{"url": "ftp://user:hunter2-pass@example.com/x?token=tok-9876"})
	if len(vs) != 1 {
		t.Fatalf("violations: got %v, want 1", vs)
	}
	for _, s := range []string{"hunter2", "tok-9876"} {
		if strings.Contains(vs[0].Message, s) {
			t.Errorf("message %q quotes %q", vs[0].Message, s)
		}
	}
}

func paths(vs []fault.Violation) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return out
}

func describeAll(vs []fault.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.Path + ": " + v.Message + "\n")
	}
	return b.String()
}

// deepClone copies a config two levels deep, enough for these tests.
func deepClone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			c := make(map[string]any, len(inner))
			for ik, iv := range inner {
				c[ik] = iv
			}
			v = c
		}
		out[k] = v
	}
	return out
}
