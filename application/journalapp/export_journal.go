package journalapp

import (
	"context"

	"github.com/yukta/yukta/domain/journal"
)

// ExportJournal returns an execution's journal as NDJSON lines: the records
// in sequence order, then the latest signed checkpoint when there is one.
type ExportJournal struct{ reader JournalReader }

// NewExportJournal returns the use case.
func NewExportJournal(r JournalReader) *ExportJournal { return &ExportJournal{reader: r} }

// Handle returns the lines, without newlines.
func (uc *ExportJournal) Handle(ctx context.Context, sessionID, executionID string) ([][]byte, error) {
	j, err := uc.reader.Journal(ctx, sessionID, executionID)
	if err != nil {
		return nil, err
	}
	lines := j.Lines
	if len(j.Checkpoint.Signature) > 0 {
		line, err := journal.CheckpointLine(j.Checkpoint)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	return lines, nil
}
