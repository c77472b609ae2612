package journalapp

import (
	"context"
	"errors"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

// ErrJournalBroken is returned for a projection of a journal whose chain does
// not verify: a view of a tampered history would look trustworthy.
var ErrJournalBroken = errors.New("journal: the chain does not verify")

// ProjectionView is the projection of a verified chain, with the tip it was
// folded up to.
type ProjectionView struct {
	journal.Projection
	Sequence int64
	ChainTip string
}

// ProjectJournal folds an execution's journal into run and node views. It
// verifies the chain first and refuses a broken one.
type ProjectJournal struct{ reader JournalReader }

// NewProjectJournal returns the use case.
func NewProjectJournal(r JournalReader) *ProjectJournal { return &ProjectJournal{reader: r} }

// Handle returns the projection.
func (uc *ProjectJournal) Handle(ctx context.Context, sessionID, executionID string) (ProjectionView, error) {
	j, err := uc.reader.Journal(ctx, sessionID, executionID)
	if err != nil {
		return ProjectionView{}, err
	}
	records := make([]journal.Record, 0, len(j.Lines))
	for _, line := range j.Lines {
		r, err := journal.ParseRecord(line)
		if err != nil {
			records = nil
			break
		}
		records = append(records, r)
	}
	rep := journal.Verify(records)
	if records == nil && len(j.Lines) > 0 || !rep.Valid {
		res := journal.VerifyLines(j.Lines, journal.Checkpoint{}, nil)
		return ProjectionView{}, fault.Newf(errors.Join(ErrJournalBroken, fault.ErrConflict),
			"the journal of execution %s does not verify (first bad sequence %d: %s), so it has no trustworthy projection; GET …/journal/verify says more",
			executionID, res.FirstBadSequence, res.Reason)
	}
	p := journal.Project(records)
	if p.ExecutionID == "" {
		p.ExecutionID = executionID
	}
	return ProjectionView{Projection: p, Sequence: rep.Sequence, ChainTip: rep.ChainTip}, nil
}
