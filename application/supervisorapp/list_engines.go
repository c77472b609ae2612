package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/supervisor"
)

// ListEngines describes every engine of the catalogue, in the order rules,
// http, workflow, process.
type ListEngines struct{ describe *DescribeEngine }

// NewListEngines returns the use case.
func NewListEngines() *ListEngines { return &ListEngines{describe: NewDescribeEngine()} }

// Handle returns the engines with their descriptions.
func (uc *ListEngines) Handle(ctx context.Context) ([]EngineDescription, error) {
	engines := supervisor.Engines()
	out := make([]EngineDescription, 0, len(engines))
	for _, e := range engines {
		d, err := uc.describe.Handle(ctx, e.Type)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
