// Package executionapp runs workflows: starting executions, the worker loop
// that claims work items in batches, runs node plugins outside transactions
// and commits their outcomes in batches, the control bus, logs and events.
// The rules of what may happen to an execution live in domain/execution; this
// package sequences them against the ports it declares.
package executionapp
