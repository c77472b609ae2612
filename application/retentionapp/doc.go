// Package retentionapp holds the retention use cases: the sweeper that
// deletes finished runs older than their policy (exporting each journal
// first when asked, leaving a tombstone per run), and the pruning that folds
// a finished run's work items into what restarts still read. Both work in
// bounded batches with a pause between them, so the engine never waits long
// behind them (docs/adr/0008-retention.md).
package retentionapp
