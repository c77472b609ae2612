package plugin_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/plugin"
)

// TestMaskSecretsMasksNamesAndShapes: a member whose name names a secret
// is masked whole at any depth, a string anywhere has its credential-shaped
// text and the run's secret values masked, everything else is kept, and the input is not changed.
func TestMaskSecretsMasksNamesAndShapes(t *testing.T) {
	t.Parallel()
	var in any
	if err := json.Unmarshal([]byte(`{"approved":true,"n":3,"note":null,"apiToken":"tok-1","nested":{"Client_Secret":{"a":"b"},
		"list":["see password=hunter22 here","use Bearer abcdefghijkl",{"x-api-key":"k"}]},"comment":"fine"}`), &in); err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(in)
	got := plugin.MaskSecrets(in, strings.NewReplacer("fine", plugin.MaskedValue))
	var want any
	if err := json.Unmarshal([]byte(`{"approved":true,"n":3,"note":null,"apiToken":"***","nested":{"Client_Secret":"***",
		"list":["see password=*** here","use Bearer ***",{"x-api-key":"***"}]},"comment":"***"}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MaskSecrets = %v, want %v", got, want)
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("MaskSecrets changed its input: %s, was %s", after, before)
	}
	for _, v := range []any{true, nil, json.Number("1.5"), 2.0, "plain"} {
		if got := plugin.MaskSecrets(v, nil); !reflect.DeepEqual(got, v) {
			t.Errorf("MaskSecrets(%v) = %v, want it unchanged", v, got)
		}
	}
}
