package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// TestNodeNotesShowWhatANodeHolds: a DELAY holding messages reads
// "holding N, next due …", not just PENDING 0 0.
func TestNodeNotesShowWhatANodeHolds(t *testing.T) {
	due := time.Date(2026, 12, 2, 1, 0, 3, 0, time.UTC)
	n := apiclient.ExecutionNode{NodeId: "wait", Type: "DELAY", Status: "PENDING", Waiting: ptr(int64(10)), DueAt: &due}
	if got, want := nodeNotes(n), "holding 10, next due 2026-12-02T01:00:03.000Z"; got != want {
		t.Errorf("nodeNotes = %q, want %q", got, want)
	}
	if got := nodeNotes(apiclient.ExecutionNode{Waiting: ptr(int64(0))}); got != "" {
		t.Errorf("nodeNotes of a node holding nothing = %q, want none", got)
	}
}

// TestReadRecordsStopJoins: stopping the stream reader while it waits for
// the server closes the body and returns only once its goroutine has.
func TestReadRecordsStopJoins(t *testing.T) {
	r, w := io.Pipe()
	records, stop := readRecords(r)
	if _, err := io.WriteString(w, "id: 7\nevent: NodeStatusChanged\ndata: {}\n\n"); err != nil {
		t.Fatal(err)
	}
	if rec := <-records; rec.err != nil || rec.ev.Event != "NodeStatusChanged" || rec.lastID != "7" {
		t.Fatalf("first record = %+v", rec)
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return while the reader waited for more of the stream")
	}
	if _, err := io.WriteString(w, "x"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("write after stop: %v, want the pipe closed", err)
	}
}
