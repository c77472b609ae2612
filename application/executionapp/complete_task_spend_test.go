package executionapp

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// TestCompleteReadsSpendStrictly: a complete's usage and cost go through
// the domain's parsers. What is stored is the parsed form (a number as the
// door decoded it, json.Number or an int, stored alike); every violation
// of both is reported at once with its member; absent stays absent.
func TestCompleteReadsSpendStrictly(t *testing.T) {
	a, err := spendOf(CompleteInput{
		Usage: map[string]any{"input": json.Number("1000"), "output": int64(20), "reasoning": 0, "tokensKnown": true},
		Cost:  map[string]any{"usd": json.Number("0.5"), "usdKnown": false, "provenance": "partial"},
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := json.Marshal(a.usage)
	c, _ := json.Marshal(a.cost)
	if string(u) != `{"input":1000,"output":20,"reasoning":0,"tokensKnown":true}` || string(c) != `{"provenance":"partial","usd":0.5,"usdKnown":false}` {
		t.Fatalf("stored usage %s cost %s", u, c)
	}

	if a, err := spendOf(CompleteInput{}); err != nil || a.usage != nil || a.cost != nil {
		t.Fatalf("absent reports: %+v, %v", a, err)
	}

	_, err = spendOf(CompleteInput{
		Usage: map[string]any{"input": -3, "output": 1, "tokensKnown": true},
		Cost:  map[string]any{"usd": 1, "usdKnown": true, "provenance": "price-table"},
	})
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("refusal: %v", err)
	}
	var paths []string
	for _, v := range ve.Violations {
		paths = append(paths, v.Path)
	}
	if !slices.Equal(paths, []string{"usage.input", "cost.provenance"}) {
		t.Fatalf("violations %+v", ve.Violations)
	}
}
