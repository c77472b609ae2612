// Package e2e boots the real yukta binary against a real PostgreSQL and drives
// it as clients do: REST through the client generated from api/openapi.yaml.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	// The tests run the binary built from these sources; linking them here
	// makes `go test` re-run e2e (instead of reusing a cached pass) whenever
	// server code changes.
	_ "github.com/yukta/yukta/bootstrap"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the yukta binary once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yukta-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "yukta")
		cmd := exec.Command("go", "build", "-o", binPath, "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is one running yukta process.
type server struct {
	t      testing.TB
	cmd    *exec.Cmd
	URL    string
	Client *apiclient.ClientWithResponses
	logs   *syncBuffer
	exited chan error
}

type serverOptions struct {
	DSN     string   // empty: the embedded cluster in DataDir
	DataDir string   // used when DSN is empty
	Env     []string // extra YUKTA_* settings
	Args    []string // extra serve flags
	Binary  string   // empty: the binary built for the test run
}

// startServer starts the binary and waits until it prints its address.
func startServer(t testing.TB, o serverOptions) *server {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}, o.Args...)
	bin := o.Binary
	if bin == "" {
		bin = binary(t)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}, o.Env...)
	if o.DSN != "" {
		cmd.Env = append(cmd.Env, "YUKTA_DATABASE_URL="+o.DSN)
		cmd.Env = append(cmd.Env, journalKeyEnv(o.DSN, o.Env)...) // see journal_test.go
	} else {
		cmd.Env = append(cmd.Env, "YUKTA_DATA_DIR="+o.DataDir)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s := &server{t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = s.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urlCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "yukta serving on "); ok {
				urlCh <- u
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	sweepJournalsAtEnd(t, s, o.DSN) // see journal_test.go
	select {
	case s.URL = <-urlCh:
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("server exited before serving: %v\n%s", err, s.logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not print its address within 60 s\n%s", s.logs.String())
	}
	s.Client, err = apiclient.NewClientWithResponses(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Stop sends SIGTERM and waits for a clean exit.
func (s *server) Stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err
		return err
	case <-time.After(45 * time.Second):
		s.Kill()
		return fmt.Errorf("server did not stop within 45 s")
	}
}

// Kill is kill -9.
func (s *server) Kill() {
	_ = s.cmd.Process.Kill()
	err := <-s.exited
	s.exited <- err
}

// waitReady polls /readyz until 200 or the deadline.
func (s *server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		res, err := s.Client.GetReadyWithResponse(context.Background())
		if err == nil && res.StatusCode() == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %v %v", d, err, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) do(t testing.TB, method, path, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	setHeaders(req, header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// setHeaders sets name, value pairs on req; "Host" sets the Host line.
func setHeaders(req *http.Request, header []string) {
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
