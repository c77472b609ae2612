package cel

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/yukta/yukta/domain/jsonvalue"
)

// toJSON turns a CEL value into a plain JSON value, keeping ints and uints
// exact. CEL's own conversion (google.protobuf.Value) would make every
// number a double.
func toJSON(v ref.Val, depth int) (any, error) {
	if depth > jsonvalue.MaxDepth {
		return nil, fmt.Errorf("its value nests deeper than %d lists or maps", jsonvalue.MaxDepth)
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("its value contains %v, which JSON cannot represent", f)
		}
		return json.Number(formatDouble(f)), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case traits.Mapper:
		out := map[string]any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("its value is a map with a key of type %s; JSON object keys are strings", k.Type().TypeName())
			}
			e, found := x.Find(k)
			if !found {
				continue
			}
			j, err := toJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = j
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			j, err := toJSON(x.Get(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, j)
		}
		return out, nil
	}
	// Durations and anything else CEL knows how to write as JSON.
	pv, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, fmt.Errorf("its value of type %s cannot be turned into JSON: %v", v.Type().TypeName(), err)
	}
	return pv.(*structpb.Value).AsInterface(), nil
}

// formatDouble writes a double as encoding/json does, but always with a
// fraction or an exponent, so that reading it back gives a double again
// (42.0, not the integer 42).
func formatDouble(f float64) string {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// 1e-07 -> 1e-7, as encoding/json writes it.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}
