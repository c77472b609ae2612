package plugin_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

type (
	obj = map[string]any
	arr = []any
)

// one returns a processor whose only config field is f.
func one(f plugin.Field) plugin.Descriptor {
	return plugin.Descriptor{Type: "T", Category: plugin.Processor, Description: "test type", Fields: []plugin.Field{f}}
}

// want is one expected violation: its exact path and substrings of its message.
type want struct {
	path string
	msg  []string
}

func checkViolations(t *testing.T, got []fault.Violation, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d violations %v, want %d", len(got), got, len(wants))
	}
	for i, w := range wants {
		if got[i].Path != w.path {
			t.Errorf("violation %d path: got %q, want %q (message %q)", i, got[i].Path, w.path, got[i].Message)
		}
		if got[i].Message == "" {
			t.Errorf("violation %d message: got empty, want a sentence", i)
		}
		for _, m := range w.msg {
			if !strings.Contains(got[i].Message, m) {
				t.Errorf("violation %d message: got %q, want it to contain %q", i, got[i].Message, m)
			}
		}
	}
}

func TestValidateFieldTypes(t *testing.T) {
	t.Parallel()
	str := plugin.Field{Name: "f", Type: plugin.String, Description: "d"}
	opts := plugin.Field{Name: "f", Type: plugin.String, Options: []string{"a", "b"}, Description: "d"}
	url := plugin.Field{Name: "f", Type: plugin.URL, Description: "d"}
	dur := plugin.Field{Name: "f", Type: plugin.Duration, Description: "d"}
	integer := plugin.Field{Name: "f", Type: plugin.Integer, Description: "d"}
	number := plugin.Field{Name: "f", Type: plugin.Number, Description: "d"}
	boolean := plugin.Field{Name: "f", Type: plugin.Boolean, Description: "d"}
	expr := plugin.Field{Name: "f", Type: plugin.Expression, Description: "d"}
	cron := plugin.Field{Name: "f", Type: plugin.Cron, Description: "d"}
	anyF := plugin.Field{Name: "f", Type: plugin.Any, Description: "d"}
	object := plugin.Field{Name: "f", Type: plugin.Object, Description: "d", Fields: []plugin.Field{
		{Name: "a", Type: plugin.String, Required: true, Description: "member a"},
		{Name: "b", Type: plugin.Integer, Description: "member b"},
	}}
	freeObject := plugin.Field{Name: "f", Type: plugin.Object, Description: "d"}
	array := plugin.Field{Name: "f", Type: plugin.Array, Description: "d", Items: &plugin.Field{Name: "item", Type: plugin.String, Description: "i"}}
	objArray := plugin.Field{Name: "f", Type: plugin.Array, Description: "d", Items: &object}
	freeArray := plugin.Field{Name: "f", Type: plugin.Array, Description: "d"}
	unknown := plugin.Field{Name: "f", Type: "strng", Description: "d"}

	cases := []struct {
		name  string
		field plugin.Field
		value any
		want  []want // nil: valid
	}{
		{"string", str, "x", nil},
		{"string empty is allowed", str, "", nil},
		{"string given a number", str, json.Number("5"), []want{{"f", []string{"must be a string, got a number"}}}},
		{"string given an object", str, obj{}, []want{{"f", []string{"must be a string, got an object"}}}},
		{"option allowed", opts, "b", nil},
		{"option not allowed", opts, "c", []want{{"f", []string{"must be one of a, b", `got "c"`}}}},
		{"option case sensitive", opts, "A", []want{{"f", []string{"must be one of a, b"}}}},
		{"url https", url, "https://example.com/x?y=1", nil},
		{"url shortest", url, "http://x", nil},
		{"url scheme only", url, "http://", []want{{"f", []string{"absolute http:// or https:// URL", `"http://"`}}}},
		{"url relative", url, "/path", []want{{"f", []string{"absolute"}}}},
		{"url other scheme", url, "ftp://example.com", []want{{"f", []string{"absolute"}}}},
		{"url upper-case scheme", url, "HTTPS://example.com", []want{{"f", []string{"absolute"}}}},
		{"url given a number", url, 5.0, []want{{"f", []string{"must be a URL string, got a number"}}}},
		{"duration", dur, "1.5s", nil},
		{"duration compound", dur, "1h2m3s", nil},
		{"duration zero", dur, "0", nil},
		{"duration negative", dur, "-1s", []want{{"f", []string{"non-negative duration", `"-1s"`}}}},
		{"duration without unit", dur, "10", []want{{"f", []string{"duration", `"10"`}}}},
		{"duration nonsense", dur, "soon", []want{{"f", []string{"duration", `"soon"`}}}},
		{"duration given a number", dur, json.Number("10"), []want{{"f", []string{"duration string", "got a number"}}}},
		{"integer float64", integer, 3.0, nil},
		{"integer json.Number", integer, json.Number("3"), nil},
		{"integer json.Number exponent", integer, json.Number("3e2"), nil},
		{"integer int", integer, 3, nil},
		{"integer int64", integer, int64(-3), nil},
		{"integer given 1.5", integer, 1.5, []want{{"f", []string{"must be an integer, got a number"}}}},
		{"integer given json.Number 1.5", integer, json.Number("1.5"), []want{{"f", []string{"must be an integer"}}}},
		{"integer out of float range", integer, json.Number("1e400"), []want{{"f", []string{"must be an integer"}}}},
		{"integer given a string", integer, "3", []want{{"f", []string{"must be an integer, got a string"}}}},
		{"number float64", number, 1.5, nil},
		{"number json.Number", number, json.Number("-2.5e3"), nil},
		{"number int", number, 7, nil},
		{"number given a string", number, "1.5", []want{{"f", []string{"must be a number, got a string"}}}},
		{"number given a boolean", number, true, []want{{"f", []string{"must be a number, got a boolean"}}}},
		{"boolean true", boolean, true, nil},
		{"boolean false", boolean, false, nil},
		{"boolean given a string", boolean, "true", []want{{"f", []string{"must be true or false, got a string"}}}},
		{"boolean given a number", boolean, json.Number("1"), []want{{"f", []string{"must be true or false, got a number"}}}},
		{"expression", expr, "payload.x > 1", nil},
		{"expression empty", expr, "", []want{{"f", []string{"must not be empty"}}}},
		{"expression blank", expr, " \n\t", []want{{"f", []string{"must not be empty"}}}},
		{"expression given a boolean", expr, true, []want{{"f", []string{"must be a string, got a boolean"}}}},
		{"cron", cron, "*/5 * * * *", nil},
		{"cron empty", cron, "", []want{{"f", []string{"must not be empty"}}}},
		{"any object", anyF, obj{"x": arr{1.0}}, nil},
		{"any string", anyF, "x", nil},
		{"object", object, obj{"a": "x", "b": json.Number("2")}, nil},
		{"object without optional member", object, obj{"a": "x"}, nil},
		{"object unknown member", object, obj{"a": "x", "c": 1.0}, []want{{"f.c", []string{"is not a known member", "known: a, b"}}}},
		{"object missing required member", object, obj{"b": 1.0}, []want{{"f.a", []string{"is required", "member a"}}}},
		{"object required member null", object, obj{"a": nil}, []want{{"f.a", []string{"is required"}}}},
		{"object member of wrong type", object, obj{"a": "x", "b": 1.5}, []want{{"f.b", []string{"must be an integer"}}}},
		{"object every member problem", object, obj{"b": "x", "z": 1.0, "y": 2.0}, []want{
			{"f.a", []string{"is required"}},
			{"f.b", []string{"must be an integer, got a string"}},
			{"f.y", []string{"not a known member"}},
			{"f.z", []string{"not a known member"}},
		}},
		{"object given an array", object, arr{}, []want{{"f", []string{"must be an object, got an array"}}}},
		{"object without Fields takes any members", freeObject, obj{"anything": arr{obj{}}}, nil},
		{"array", array, arr{"a", "b"}, nil},
		{"array empty", array, arr{}, nil},
		{"array item of wrong type", array, arr{"a", 1.0, "c", false}, []want{
			{"f[1]", []string{"must be a string, got a number"}},
			{"f[3]", []string{"must be a string, got a boolean"}},
		}},
		{"array of objects", objArray, arr{obj{"a": "x"}, obj{"b": 1.0}}, []want{{"f[1].a", []string{"is required"}}}},
		{"array of objects unknown member", objArray, arr{obj{"a": "x", "q": 1.0}}, []want{{"f[0].q", []string{"not a known member"}}}},
		{"array given an object", array, obj{}, []want{{"f", []string{"must be an array, got an object"}}}},
		{"array without Items takes anything", freeArray, arr{1.0, "x", nil, obj{}}, nil},
		{"unknown field type", unknown, "x", []want{{"f", []string{"unknown field type", `"strng"`}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkViolations(t, one(tc.field).Validate(obj{"f": tc.value}), tc.want)
		})
	}
}

func TestValidateConfig(t *testing.T) {
	t.Parallel()
	d := plugin.Descriptor{
		Type: "CALL", Category: plugin.Processor, Description: "calls",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.URL, Required: true, Description: "address to call"},
			{Name: "method", Type: plugin.String, Options: []string{"GET", "POST"}, Default: "GET", Description: "method"},
			{Name: "token", Type: plugin.String, Secret: true, Description: "token"},
		},
	}
	cases := []struct {
		name   string
		config map[string]any
		want   []want
	}{
		{"valid", obj{"url": "https://x.y"}, nil},
		{"required missing", obj{}, []want{{"url", []string{"is required", "url: address to call"}}}},
		{"nil config", nil, []want{{"url", []string{"is required"}}}},
		{"required null", obj{"url": nil}, []want{{"url", []string{"is required"}}}},
		{"optional null", obj{"url": "https://x.y", "method": nil}, nil},
		{"unknown field", obj{"url": "https://x.y", "retries": 1.0}, []want{{"retries", []string{"is not a config field of CALL", "known fields: url, method, token"}}}},
		{"every problem at once, unknown fields sorted", obj{"method": "PUT", "zz": 1.0, "aa": 2.0}, []want{
			{"url", []string{"is required"}},
			{"method", []string{"must be one of GET, POST"}},
			{"aa", []string{"not a config field"}},
			{"zz", []string{"not a config field"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkViolations(t, d.Validate(tc.config), tc.want)
		})
	}
	t.Run("type without fields", func(t *testing.T) {
		t.Parallel()
		d := plugin.Descriptor{Type: "NONE", Category: plugin.Terminal, Description: "x"}
		checkViolations(t, d.Validate(obj{"x": 1.0}), []want{{"x", []string{"not a config field of NONE", "(none)"}}})
		checkViolations(t, d.Validate(nil), nil)
	})
}

func TestValidateCheckFunc(t *testing.T) {
	t.Parallel()
	var seen []map[string]any
	d := plugin.Descriptor{
		Type: "T", Category: plugin.Processor, Description: "x",
		Fields: []plugin.Field{
			{Name: "limit", Type: plugin.Integer, Default: 10, Description: "limit"},
			{Name: "name", Type: plugin.String, Description: "name"},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			seen = append(seen, config)
			if config["name"] == "bad" {
				return []fault.Violation{{Path: "name", Message: "is bad"}}
			}
			return nil
		},
	}
	// Not t.Parallel: the subtests share seen, in order.
	checkViolations(t, d.Validate(obj{"name": "ok"}), nil)
	if len(seen) != 1 || seen[0]["limit"] != 10 {
		t.Fatalf("CheckFunc config: got %v, want one call seeing the default limit 10", seen)
	}
	checkViolations(t, d.Validate(obj{"name": "bad"}), []want{{"name", []string{"is bad"}}})
	// A field that failed its own check is absent from what CheckFunc
	// sees, not defaulted, and the type's checks still run on the rest.
	checkViolations(t, d.Validate(obj{"name": 5.0, "limit": "x"}), []want{
		{"limit", []string{"must be an integer"}}, {"name", []string{"must be a string"}}})
	if len(seen) != 3 || len(seen[2]) != 0 {
		t.Fatalf("CheckFunc with failed fields: got %v, want a third call seeing neither name nor the default limit", seen)
	}
}

// TestValidateOnePass: the type's own checks report in the same answer as
// the field checks (an unknown field no longer hides a credential in a
// plain header), and never repeat a field the field checks reported.
func TestValidateOnePass(t *testing.T) {
	t.Parallel()
	d := plugin.Descriptor{
		Type: "T", Category: plugin.Processor, Description: "x",
		Fields: []plugin.Field{
			{Name: "cron", Type: plugin.String, Required: true, Description: "cron"},
			{Name: "headers", Type: plugin.Object, Values: &plugin.Field{Name: "value", Type: plugin.String, Description: "v"}, Description: "headers"},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			var vs []fault.Violation
			if s, _ := config["cron"].(string); s == "" {
				vs = append(vs, fault.Violation{Path: "cron", Message: "is not a valid cron expression"})
			}
			if h, ok := config["headers"].(map[string]any); ok && h["X-Api-Key"] != nil {
				vs = append(vs, fault.Violation{Path: "headers.X-Api-Key", Message: "looks like a credential"})
			}
			return vs
		},
	}
	got := d.Validate(obj{"timeoutMs": "x", "headers": obj{"X-Api-Key": "abc"}})
	checkViolations(t, got, []want{
		{"cron", []string{"is required"}},
		{"timeoutMs", []string{"not a config field of T"}},
		{"headers.X-Api-Key", []string{"looks like a credential"}},
	})
	if len(got) != 3 {
		t.Fatalf("got %d violations, want 3 (the missing cron once, not again as invalid): %v", len(got), got)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	good := func() plugin.Descriptor {
		return plugin.Descriptor{
			Type: "HTTP_REQUEST2", Category: plugin.Processor, Description: "x",
			Fields: []plugin.Field{
				{Name: "a", Type: plugin.Integer, Default: 1, Description: "a"},
				{Name: "b", Type: plugin.String, Options: []string{"x", "y"}, Default: "x", Description: "b"},
				{Name: "c", Type: plugin.Duration, Default: "1s", Description: "c"},
				{Name: "d", Type: plugin.Object, Description: "d", Fields: []plugin.Field{{Name: "e", Type: plugin.Boolean, Description: "e"}}},
				{Name: "f", Type: plugin.Array, Description: "f", Items: &plugin.Field{Name: "g", Type: plugin.URL, Description: "g"}},
			},
		}
	}
	if err := good().Check(); err != nil {
		t.Fatalf("Check(valid descriptor): got %v, want nil", err)
	}
	for _, c := range []plugin.Category{plugin.Trigger, plugin.Processor, plugin.Terminal} {
		d := good()
		d.Category = c
		if err := d.Check(); err != nil {
			t.Errorf("Check(category %s): got %v, want nil", c, err)
		}
	}
	for _, typ := range []string{"A", "A_1", "X" + strings.Repeat("Y", 63)} {
		d := good()
		d.Type = typ
		if err := d.Check(); err != nil {
			t.Errorf("Check(type %q): got %v, want nil", typ, err)
		}
	}
	cases := []struct {
		name   string
		change func(d *plugin.Descriptor)
		want   []string
	}{
		{"lower-case type", func(d *plugin.Descriptor) { d.Type = "http" }, []string{`type "http"`}},
		{"empty type", func(d *plugin.Descriptor) { d.Type = "" }, []string{`type ""`}},
		{"type starting with a digit", func(d *plugin.Descriptor) { d.Type = "1HTTP" }, []string{`"1HTTP"`}},
		{"type with a dash", func(d *plugin.Descriptor) { d.Type = "HTTP-REQUEST" }, []string{`"HTTP-REQUEST"`}},
		{"type longer than 64", func(d *plugin.Descriptor) { d.Type = "X" + strings.Repeat("Y", 64) }, []string{"must match"}},
		{"unknown category", func(d *plugin.Descriptor) { d.Category = "sink" }, []string{`category "sink"`}},
		{"empty category", func(d *plugin.Descriptor) { d.Category = "" }, []string{"category"}},
		{"empty description", func(d *plugin.Descriptor) { d.Description = "" }, []string{"description"}},
		{"repeated field", func(d *plugin.Descriptor) {
			d.Fields = append(d.Fields, plugin.Field{Name: "a", Type: plugin.String, Description: "again"})
		}, []string{`field name "a"`, "repeated"}},
		{"empty field name", func(d *plugin.Descriptor) {
			d.Fields = append(d.Fields, plugin.Field{Type: plugin.String, Description: "anon"})
		}, []string{`field name ""`}},
		{"integer default 1.5", func(d *plugin.Descriptor) { d.Fields[0].Default = 1.5 }, []string{`default of field "a"`, "integer"}},
		{"integer default string", func(d *plugin.Descriptor) { d.Fields[0].Default = "1" }, []string{`default of field "a"`}},
		{"default outside the options", func(d *plugin.Descriptor) { d.Fields[1].Default = "z" }, []string{`default of field "b"`}},
		{"bad duration default", func(d *plugin.Descriptor) { d.Fields[2].Default = "soon" }, []string{`default of field "c"`, "duration"}},
		{"unknown field type", func(d *plugin.Descriptor) {
			d.Fields = append(d.Fields, plugin.Field{Name: "z", Type: "strng", Description: "typo"})
		}, []string{`field "z"`, `"strng"`}},
		{"unknown member type", func(d *plugin.Descriptor) { d.Fields[3].Fields[0].Type = "bool" }, []string{`field "d"`, `"bool"`}},
		{"unknown item type", func(d *plugin.Descriptor) { d.Fields[4].Items.Type = "link" }, []string{`field "f"`, `"link"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := good()
			d.Fields[4].Items = &plugin.Field{Name: "g", Type: plugin.URL, Description: "g"}
			d.Fields[3].Fields = slices.Clone(d.Fields[3].Fields)
			tc.change(&d)
			err := d.Check()
			if err == nil {
				t.Fatalf("Check: got nil, want an error")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Check error: got %q, want it to contain %q", err, s)
				}
			}
		})
	}
}

func TestPorts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		d      plugin.Descriptor
		config map[string]any
		want   []string
	}{
		{"processor without PortsFunc", plugin.Descriptor{Category: plugin.Processor}, nil, []string{plugin.DefaultPort}},
		{"trigger without PortsFunc", plugin.Descriptor{Category: plugin.Trigger}, nil, []string{plugin.DefaultPort}},
		{"terminal without PortsFunc", plugin.Descriptor{Category: plugin.Terminal}, nil, []string{}},
		{"PortsFunc reads the config", plugin.Descriptor{
			Category: plugin.Processor,
			PortsFunc: func(c map[string]any) []string {
				return []string{fmt.Sprint(c["port"]), plugin.DefaultPort}
			},
		}, obj{"port": "big"}, []string{"big", plugin.DefaultPort}},
		{"PortsFunc wins for a terminal too", plugin.Descriptor{
			Category:  plugin.Terminal,
			PortsFunc: func(map[string]any) []string { return []string{"audit"} },
		}, nil, []string{"audit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.d.Ports(tc.config)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Errorf("Ports: got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func secretDescriptor() plugin.Descriptor {
	return plugin.Descriptor{
		Type: "T", Category: plugin.Processor, Description: "x",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.URL, Description: "u"},
			{Name: "token", Type: plugin.String, Secret: true, Description: "t"},
			{Name: "auth", Type: plugin.Object, Secret: true, Description: "a"},
		},
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	d := secretDescriptor()
	cases := []struct {
		name   string
		config map[string]any
		want   map[string]any
	}{
		{"secrets masked, others kept", obj{"url": "http://a.b", "token": "t0k", "auth": obj{"user": "u"}},
			obj{"url": "http://a.b", "token": plugin.MaskedValue, "auth": plugin.MaskedValue}},
		{"absent secret stays absent", obj{"url": "http://a.b"}, obj{"url": "http://a.b"}},
		{"empty secret is masked", obj{"token": ""}, obj{"token": plugin.MaskedValue}},
		{"null secret stays null", obj{"token": nil}, obj{"token": nil}},
		{"unknown fields kept", obj{"extra": "e", "token": "x"}, obj{"extra": "e", "token": plugin.MaskedValue}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := cloneJSON(t, tc.config)
			got := d.Mask(in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Mask: got %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.config) {
				t.Errorf("Mask changed its argument: got %#v, want %#v", in, tc.config)
			}
		})
	}
	t.Run("nil config", func(t *testing.T) {
		t.Parallel()
		if got := d.Mask(nil); len(got) != 0 {
			t.Errorf("Mask(nil): got %#v, want empty", got)
		}
	})
	if got, want := d.SecretFields(), []string{"token", "auth"}; !slices.Equal(got, want) {
		t.Errorf("SecretFields: got %q, want %q", got, want)
	}
	if got := (plugin.Descriptor{}).SecretFields(); len(got) != 0 {
		t.Errorf("SecretFields of a type without fields: got %q, want none", got)
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	d := plugin.Descriptor{
		Type: "T", Category: plugin.Processor, Description: "x",
		Fields: []plugin.Field{
			{Name: "method", Type: plugin.String, Default: "GET", Description: "m"},
			{Name: "limit", Type: plugin.Integer, Default: 10, Description: "l"},
			{Name: "flag", Type: plugin.Boolean, Default: false, Description: "f"},
			{Name: "url", Type: plugin.URL, Description: "no default"},
		},
	}
	cases := []struct {
		name   string
		config map[string]any
		want   map[string]any
	}{
		{"absent fields take defaults", obj{"url": "http://a.b"}, obj{"url": "http://a.b", "method": "GET", "limit": 10, "flag": false}},
		{"present fields kept", obj{"method": "POST", "limit": json.Number("3"), "flag": true}, obj{"method": "POST", "limit": json.Number("3"), "flag": true}},
		{"nil config", nil, obj{"method": "GET", "limit": 10, "flag": false}},
		{"unknown fields kept", obj{"x": 1.0}, obj{"x": 1.0, "method": "GET", "limit": 10, "flag": false}},
		// Validate treats null as absent, so the defaults must too.
		{"null fields take defaults", obj{"method": nil, "limit": nil}, obj{"method": "GET", "limit": 10, "flag": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := cloneJSON(t, tc.config)
			got := d.WithDefaults(in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WithDefaults: got %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.config) {
				t.Errorf("WithDefaults changed its argument: got %#v, want %#v", in, tc.config)
			}
		})
	}
}

// cloneJSON copies a config one level deep, keeping nil as nil.
func cloneJSON(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestCategoryValid(t *testing.T) {
	t.Parallel()
	for _, c := range []plugin.Category{plugin.Trigger, plugin.Processor, plugin.Terminal} {
		if !c.Valid() {
			t.Errorf("%q.Valid(): got false, want true", c)
		}
	}
	for _, c := range []plugin.Category{"", "Trigger", "sink"} {
		if c.Valid() {
			t.Errorf("%q.Valid(): got true, want false", c)
		}
	}
}

func TestValidateAcceptsMaskedSecretDespiteTypeChecks(t *testing.T) {
	t.Parallel()
	d := plugin.Descriptor{
		Type: "HOOK", Category: plugin.Trigger, Description: "d",
		Fields: []plugin.Field{{Name: "secret", Type: plugin.String, Secret: true, Required: true}},
		CheckFunc: func(c map[string]any) []fault.Violation {
			if s, ok := c["secret"].(string); ok && len(s) < 16 {
				return []fault.Violation{{Path: "secret", Message: "too short"}}
			}
			return nil
		},
	}
	if vs := d.Validate(map[string]any{"secret": plugin.MaskedValue}); len(vs) != 0 {
		t.Fatalf("masked secret: got %v, want no violations (the stored value was checked when applied)", vs)
	}
	if vs := d.Validate(map[string]any{"secret": "short"}); len(vs) != 1 {
		t.Fatalf("short secret: got %v, want the type's own check to fire", vs)
	}
}
