package supervisorapp

import (
	"context"
	"fmt"
)

// ListSupervisors lists the supervisors, secret settings masked.
type ListSupervisors struct{ r Reader }

// NewListSupervisors returns the use case.
func NewListSupervisors(r Reader) *ListSupervisors { return &ListSupervisors{r: r} }

// ListInput says whom the list is for.
type ListInput struct {
	// Only, when not nil, keeps the supervisors a caller limited to these
	// sessions may see (Visible).
	Only []string
}

// Handle returns every supervisor the caller may see, in id order. There
// is no paging: a server has a handful of supervisors, not thousands.
func (uc *ListSupervisors) Handle(ctx context.Context, in ListInput) ([]Summary, error) {
	all, err := uc.r.Supervisors(ctx)
	if err != nil {
		return nil, fmt.Errorf("list supervisors: %w", err)
	}
	out := make([]Summary, 0, len(all))
	for _, s := range all {
		if Visible(s.Supervisor, in.Only) {
			s.Supervisor = s.Supervisor.Masked()
			out = append(out, s)
		}
	}
	return out, nil
}
