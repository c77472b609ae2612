// Command go is an example worker for Yukta's TASK nodes, on the Go worker
// package (github.com/yukta/yukta/worker). For each task it posts the task's
// idempotency key and payload to an effect service (the side effect a real
// worker would have, such as charging a card) and answers with what it did.
// docs/workers.md describes it; e2e/workers_test.go runs it, two at a time,
// beside the TypeScript and Python workers.
//
// Settings, from the environment:
//
//	YUKTA_URL           the server (default http://127.0.0.1:8080)
//	YUKTA_API_KEY       a key of the role WORKER (empty: a server without keys)
//	WORKER_QUEUES       the queues to take tasks from, comma-separated (default "default")
//	WORKER_NAME         this worker's name in its output (default "go")
//	WORKER_CONCURRENCY  tasks at once (default 4)
//	EFFECT_URL          where to post each task's effect (empty: no effect)
//
// SIGTERM or SIGINT stops it gracefully: no more polls, running tasks
// finish within 10 s.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/yukta/yukta/worker"
)

// effect is what the worker posts to EFFECT_URL for each task.
type effect struct {
	Key        string `json:"key"`
	TaskID     string `json:"taskId"`
	LeaseToken string `json:"leaseToken"`
	Attempt    int    `json:"attempt"`
	Queue      string `json:"queue"`
	Worker     string `json:"worker"`
	Payload    any    `json:"payload"`
}

// output is the task's answer.
type output struct {
	Key     string `json:"key"`
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	Payload any    `json:"payload"`
}

func main() {
	log.SetFlags(0)
	name := env("WORKER_NAME", "go")
	concurrency, err := strconv.Atoi(env("WORKER_CONCURRENCY", "4"))
	if err != nil {
		log.Fatalf("%s: WORKER_CONCURRENCY: %v", name, err)
	}
	effectURL := os.Getenv("EFFECT_URL")
	handle := func(ctx context.Context, t *worker.Task, payload any) (output, error) {
		if effectURL != "" {
			if err := post(ctx, effectURL, effect{Key: t.IdempotencyKey, TaskID: t.ID, LeaseToken: t.LeaseToken,
				Attempt: t.Attempt, Queue: t.Queue, Worker: name, Payload: payload}); err != nil {
				return output{}, err // retryable: the next attempt posts the same key
			}
		}
		if p, _ := payload.(map[string]any); p["log"] == true {
			if err := t.Log(ctx, "info", name+" handled "+t.IdempotencyKey); err != nil {
				log.Printf("%s: log: %v", name, err)
			}
		}
		return output{Key: t.IdempotencyKey, Worker: name, Attempt: t.Attempt, Payload: payload}, nil
	}
	var handlers []worker.Handler
	for _, q := range strings.Split(env("WORKER_QUEUES", "default"), ",") {
		handlers = append(handlers, worker.Handle(strings.TrimSpace(q), handle))
	}
	w, err := worker.New(worker.Config{URL: env("YUKTA_URL", "http://127.0.0.1:8080"), Token: os.Getenv("YUKTA_API_KEY"),
		Name: name, Concurrency: concurrency, Logf: log.Printf}, handlers...)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Printf("%s: polling %s\n", name, env("WORKER_QUEUES", "default"))
	if err := w.Run(ctx); err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	fmt.Printf("%s: stopped\n", name)
}

func post(ctx context.Context, url string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("the effect service answered %s", res.Status)
	}
	return nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
