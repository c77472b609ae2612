package executionapp_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

type secretCatalog map[string]plugin.Descriptor

func (c secretCatalog) Describe(t string) (plugin.Descriptor, bool) { d, ok := c[t]; return d, ok }

// TestSecretValuesCoverSecretMaps checks that the values log masking uses
// include every value of a secret map (secretHeaders, secretQuery), a
// value as escaped in a URL query, and never a plain header.
func TestSecretValuesCoverSecretMaps(t *testing.T) {
	t.Parallel()
	strMap := &plugin.Field{Name: "v", Type: plugin.String}
	cat := secretCatalog{"SEND": {Type: "SEND", Category: plugin.Processor, Description: "x", Fields: []plugin.Field{
		{Name: "authorization", Type: plugin.String, Secret: true},
		{Name: "headers", Type: plugin.Object, Values: strMap},
		{Name: "secretHeaders", Type: plugin.Object, Secret: true, Values: strMap},
		{Name: "secretQuery", Type: plugin.Object, Secret: true, Values: strMap},
	}}}
	w, err := session.RestoreWorkflow("w", "", []byte(`{"nodes":[{"nodeId":"a","type":"SEND","config":{
		"authorization":"Bearer tok-0123456789",
		"headers":{"X-Tenant":"plain-tenant"},
		"secretHeaders":{"X-API-Key":"key-abcdefgh","Cookie":"sid=cookie-12345678","X-Short":"ab"},
		"secretQuery":{"api_key":"q v/9876+zz"}}}],"edges":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	pairs := executionapp.SecretValues(w, cat)
	var vals []string
	for i := 0; i < len(pairs); i += 2 {
		vals = append(vals, pairs[i])
		if pairs[i+1] != plugin.MaskedValue {
			t.Errorf("pair %d: got replacement %q, want %q", i/2, pairs[i+1], plugin.MaskedValue)
		}
	}
	for _, want := range []string{"Bearer tok-0123456789", "tok-0123456789", "key-abcdefgh", "sid=cookie-12345678", "q v/9876+zz", url.QueryEscape("q v/9876+zz")} {
		if !slices.Contains(vals, want) {
			t.Errorf("SecretValues: got %q, want it to hold %q", vals, want)
		}
	}
	for _, never := range []string{"plain-tenant", "ab"} {
		if slices.Contains(vals, never) {
			t.Errorf("SecretValues: got %q, want no %q", vals, never)
		}
	}
	line := strings.NewReplacer(pairs...).Replace("sent X-API-Key key-abcdefgh to /x?api_key=" + url.QueryEscape("q v/9876+zz") + " for plain-tenant")
	if want := "sent X-API-Key *** to /x?api_key=*** for plain-tenant"; line != want {
		t.Errorf("masked line: got %q, want %q", line, want)
	}
}
