package rulesengine

import (
	"context"

	"github.com/yukta/yukta/application/supervisorapp"
)

// factsCache reads the facts of runs (the execution variable) for the rules
// engine. While an outbox batch lasts, the first run whose facts are needed
// brings the facts of every run of the batch, in one query (FactsMany),
// and each is kept for the rest of the batch; outside a batch (TICK,
// STARTED, or an engine driven without the batch hooks) every read goes to
// the database. It is used from the engine's goroutine only.
//
// Why a kept value is never older than an event it serves: begin is called
// after the batch was read from the outbox, and a read sees committed
// events only, so every fact read during the batch is read after every
// event of the batch was committed and reflects them all (for activeCount,
// the other runs' events too). What a kept value can miss is what was
// committed after it was read:
//   - the engine's own directives: the engine calls invalidate after each
//     directive it sends, which drops every run (a directive may change
//     several: a workflow's runs, or every run's activeCount by a start);
//     the rest of the batch then reads run by run, so a rule that fires
//     often costs a query per run, not one of the whole batch per
//     directive;
//   - other writers' changes: their events come in a later batch, which
//     starts with nothing kept (end drops everything).
//
// A read per event could see those other writers' changes a little sooner,
// but never in step with the events: facts are the run as it is now, not
// as it was at the event, either way.
type factsCache struct {
	runs   supervisorapp.RunDirectory
	active bool
	// batch lists the runs of the batch not read yet: the first miss reads
	// them all.
	batch []string
	kept  map[string]keptFacts
}

type keptFacts struct {
	facts supervisorapp.RunFacts
	ok    bool
}

func newFactsCache(runs supervisorapp.RunDirectory) *factsCache {
	return &factsCache{runs: runs, kept: map[string]keptFacts{}}
}

// begin starts a batch about runs: from now on facts are kept.
func (c *factsCache) begin(runs []string) {
	clear(c.kept)
	c.batch, c.active = runs, true
}

// end ends the batch: facts are dropped and no longer kept.
func (c *factsCache) end() {
	clear(c.kept)
	c.batch, c.active = nil, false
}

// invalidate drops what is kept; the batch goes on, read run by run.
func (c *factsCache) invalidate() {
	clear(c.kept)
	c.batch = nil
}

// facts returns the facts of a run (ok is false when it does not exist),
// read once per batch. A failed read is not kept.
func (c *factsCache) facts(ctx context.Context, id string) (supervisorapp.RunFacts, bool, error) {
	if !c.active {
		return c.runs.Facts(ctx, id)
	}
	if k, hit := c.kept[id]; hit {
		return k.facts, k.ok, nil
	}
	ids := []string{id}
	for _, r := range c.batch {
		if _, hit := c.kept[r]; !hit && r != id {
			ids = append(ids, r)
		}
	}
	got, err := c.runs.FactsMany(ctx, ids)
	if err != nil {
		return supervisorapp.RunFacts{}, false, err
	}
	c.batch = nil
	for _, r := range ids {
		f, ok := got[r]
		c.kept[r] = keptFacts{facts: f, ok: ok}
	}
	k := c.kept[id]
	return k.facts, k.ok, nil
}
