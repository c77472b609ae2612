package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/journal"
)

// failingSink refuses its first failures calls, then keeps what it hears.
type failingSink struct {
	mu       sync.Mutex
	failures int
	calls    int
	heard    []journalapp.AuditRecord
}

func (s *failingSink) Audit(_ context.Context, rs []journalapp.AuditRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failures {
		return errors.New("the audit store is down")
	}
	s.heard = append(s.heard, rs...)
	return nil
}

// TestAuditSinkHoldsTheJournalBack: the observer hands each round's
// records to the audit sink before the round commits; a refusal rolls the
// round back (nothing journaled, the cursor unmoved), and the retry hands
// the same records again, so the sink ends with every record, each line
// the export's byte for byte.
func TestAuditSinkHoldsTheJournalBack(t *testing.T) {
	f := newJournalFixture(t, 1000)
	sink := &failingSink{failures: 1}
	f.obs.UseAuditSink(sink)
	const exec = "0193a000-0000-7000-8000-00000000a0d1"
	f.emit(t, runEvents(exec, 0))

	var failed error
	for range 1000 { // other tests' open transactions may hide the events for a moment
		res, err := f.obs.Step(context.Background())
		if err != nil {
			failed = err
			break
		}
		if res.Events > 0 {
			t.Fatalf("a round journaled %d events while the sink refused them", res.Events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if failed == nil || !bytes.Contains([]byte(failed.Error()), []byte("audit sink: the audit store is down")) {
		t.Fatalf("the round the sink refused: %v, want its error", failed)
	}
	if lines, err := f.export.Handle(context.Background(), journalSession, exec); err != nil || len(lines) != 0 {
		t.Fatalf("after the refused round the journal has %d lines (%v), want none", len(lines), err)
	}

	f.drain(t)
	lines, err := f.export.Handle(context.Background(), journalSession, exec)
	if err != nil {
		t.Fatal(err)
	}
	var records [][]byte
	for _, l := range lines {
		if !journal.IsCheckpointLine(l) {
			records = append(records, l)
		}
	}
	var heard []journalapp.AuditRecord
	for _, r := range sink.heard {
		if r.ExecutionID == exec {
			heard = append(heard, r)
		}
	}
	if len(records) == 0 || len(heard) != len(records) {
		t.Fatalf("the sink heard %d records of the run, the journal has %d", len(heard), len(records))
	}
	for i, r := range heard {
		if !bytes.Equal(r.Line, records[i]) || r.Sequence != int64(i+1) || r.SessionID != journalSession || r.Digest == "" {
			t.Errorf("record %d: heard %+v, journaled %s", i+1, r, records[i])
		}
	}
}
