package supervisorapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// reviewApplier moves reviews and applies the commands they allow. Every
// use case that can allow a command (a verdict, an approval, a timeout's
// default) shares it, so the command applies the same way whoever allowed
// it.
type reviewApplier struct {
	store   ReviewStore
	control ReviewedController
	start   ReviewedStarter
	sups    Reader
	now     func() time.Time
}

// ApplierDeps are what the review use cases need.
type ApplierDeps struct {
	Store       ReviewStore
	Control     ReviewedController
	Start       ReviewedStarter
	Supervisors Reader
	Now         func() time.Time
}

func newApplier(d ApplierDeps) *reviewApplier {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &reviewApplier{store: d.Store, control: d.Control, start: d.Start, sups: d.Supervisors, now: d.Now}
}

// change moves a review with move and journals the new steps; when the
// move allowed the command, it applies it. It returns the review as it
// stands afterwards.
func (a *reviewApplier) change(ctx context.Context, id string, fence *Fence, move func(*supervisor.Review) error) (supervisor.Review, error) {
	r, err := a.store.ChangeReview(ctx, id, fence, func(r supervisor.Review) (supervisor.Review, []executionapp.Event, error) {
		n := len(r.Steps())
		if err := move(&r); err != nil {
			return supervisor.Review{}, nil, err
		}
		return r, reviewEvents(r, n), nil
	})
	if err != nil {
		return supervisor.Review{}, err
	}
	if r.Status() == supervisor.ReviewAllowed {
		return a.apply(ctx, r)
	}
	return r, nil
}

// apply hands an allowed command to its use case, past the gate, and
// records what it gave. The command carries its own key, or review:<id>,
// so applying it again (an applier that died before recording the outcome)
// has no second effect.
func (a *reviewApplier) apply(ctx context.Context, r supervisor.Review) (supervisor.Review, error) {
	var out executionapp.ReviewOutcome
	if r.Command().Type() == supervisor.StartWorkflow {
		var in executionapp.StartInput
		if err := json.Unmarshal(r.Request(), &in); err != nil {
			return supervisor.Review{}, fmt.Errorf("supervisorapp: the request of review %s: %w", r.ID(), err)
		}
		if in.IdempotencyKey == "" {
			in.IdempotencyKey = reviewKey(r.ID())
		}
		res, err := a.start.Reviewed(ctx, in)
		switch {
		case err != nil && !isRefusal(err):
			return supervisor.Review{}, err
		case err != nil:
			out.Refused = err.Error()
		default:
			out.ExecutionID, out.Status = res.ExecutionID, string(res.Status)
		}
	} else {
		var req executionapp.ControlRequest
		if err := json.Unmarshal(r.Request(), &req); err != nil {
			return supervisor.Review{}, fmt.Errorf("supervisorapp: the request of review %s: %w", r.ID(), err)
		}
		if req.Key == "" {
			req.Key = reviewKey(r.ID())
		}
		res, err := a.control.Reviewed(ctx, req)
		switch {
		case err != nil && !isRefusal(err):
			return supervisor.Review{}, err
		case err != nil:
			out.Refused = err.Error()
			out.CommandID, out.Status, out.Message = res.CommandID, res.Status, res.Message
		default:
			out.CommandID, out.Status, out.Message, out.ResultExecutionIDs = res.CommandID, res.Status, res.Message, res.ResultExecutionIDs
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return supervisor.Review{}, err
	}
	done, err := a.store.ChangeReview(ctx, r.ID(), nil, func(cur supervisor.Review) (supervisor.Review, []executionapp.Event, error) {
		n := len(cur.Steps())
		if err := cur.Applied(b, a.now()); err != nil {
			return supervisor.Review{}, nil, err
		}
		evs := reviewEvents(cur, n)
		for i := range evs {
			evs[i].Data["outcome"] = outcomeData(out)
		}
		return cur, evs, nil
	})
	if errors.Is(err, supervisor.ErrReviewSettled) {
		// Another applier recorded it first (the same effect, by the key).
		cur, _, rerr := a.store.Review(ctx, r.ID())
		return cur, rerr
	}
	return done, err
}

func outcomeData(o executionapp.ReviewOutcome) map[string]any {
	m := map[string]any{}
	for k, v := range map[string]string{"commandId": o.CommandID, "status": o.Status, "message": o.Message, "executionId": o.ExecutionID, "refused": o.Refused} {
		if v != "" {
			m[k] = v
		}
	}
	if len(o.ResultExecutionIDs) > 0 {
		m["resultExecutionIds"] = o.ResultExecutionIDs
	}
	return m
}

// reviewKey is the idempotency key a reviewed command without its own
// carries.
func reviewKey(id string) string { return "review:" + id }

// parents returns the parent lookup of the stored supervisors.
func (a *reviewApplier) parents(ctx context.Context) (supervisor.ParentOfFunc, error) {
	list, err := a.sups.Supervisors(ctx)
	if err != nil {
		return nil, err
	}
	parent := make(map[string]string, len(list))
	enabled := make(map[string]bool, len(list))
	for _, s := range list {
		parent[s.Supervisor.ID()], enabled[s.Supervisor.ID()] = s.Supervisor.ParentID(), s.Supervisor.Enabled()
	}
	// A disabled parent is passed over: its nearest enabled ancestor
	// decides.
	return func(id string) string {
		for i, p := 0, parent[id]; p != "" && i < supervisor.MaxDepth; i, p = i+1, parent[p] {
			if enabled[p] {
				return p
			}
		}
		return ""
	}, nil
}
