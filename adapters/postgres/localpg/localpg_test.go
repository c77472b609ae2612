package localpg_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/localpg"
)

// helperDirEnv makes the test binary act as a separate "yukta serve" that owns a
// cluster, so a test can SIGKILL the owner the way a crash or OOM kill would.
const helperDirEnv = "LOCALPG_TEST_OWNER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		runOwnerHelper(dir)
		return
	}
	os.Exit(m.Run())
}

// runOwnerHelper starts a persistent cluster, commits a row, reports READY and then
// waits to be killed.
func runOwnerHelper(dir string) {
	ctx := context.Background()
	c, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err == nil {
		_, err = conn.Exec(ctx, `CREATE TABLE owned (v text); INSERT INTO owned VALUES ('before-owner-kill')`)
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	time.Sleep(time.Minute) // the test kills us long before this
	os.Exit(2)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tempDir mirrors what callers must do: os.MkdirTemp, because t.TempDir's parent is
// not traversable for the postgres OS user when the tests run as root. It is opened
// up to 0755 so tests can also place the cluster in a subfolder.
func tempDir(t *testing.T) string {
	t.Helper()
	d := lockedTempDir(t)
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// lockedTempDir is os.MkdirTemp as is: 0700 and, under root, owned by root.
func lockedTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "yukta-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func mustStart(t *testing.T, ctx context.Context, o localpg.Options) (*localpg.Cluster, time.Duration) {
	t.Helper()
	begin := time.Now()
	c, err := localpg.Start(ctx, o)
	if err != nil {
		t.Fatalf("Start(%s): %v", o.Dir, err)
	}
	took := time.Since(begin)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c, took
}

func connect(t *testing.T, ctx context.Context, c *localpg.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func exec1(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryString(t *testing.T, ctx context.Context, c *localpg.Cluster, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func stop(t *testing.T, c *localpg.Cluster) {
	t.Helper()
	begin := time.Now()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stop took %v", time.Since(begin).Round(time.Millisecond))
	select {
	case <-c.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
}

func TestEphemeral(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	begin := time.Now()
	c, err := localpg.StartEphemeral(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ephemeral start took %v", time.Since(begin).Round(time.Millisecond))
	dir := filepath.Dir(c.SocketDir())

	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, ctx, conn, `CREATE TABLE t (id int PRIMARY KEY, v text)`)
	exec1(t, ctx, conn, `INSERT INTO t VALUES (1, 'hello')`)
	var v, fsync string
	if err := conn.QueryRow(ctx, `SELECT v, current_setting('fsync') FROM t WHERE id = 1`).Scan(&v, &fsync); err != nil {
		t.Fatal(err)
	}
	if v != "hello" || fsync != "off" {
		t.Fatalf("got v=%q fsync=%q, want hello/off", v, fsync)
	}
	_ = conn.Close(ctx)

	stop(t, c)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ephemeral dir %s still exists after Stop (stat err %v)", dir, err)
	}
}

func TestPersistentRestartKeepsData(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempDir(t), "data dir") // a space exercises DSN and GUC quoting

	c, first := mustStart(t, ctx, localpg.Options{Dir: dir})
	t.Logf("first start (initdb + start) took %v", first.Round(time.Millisecond))
	if !c.Created() || c.DataDir() != filepath.Join(dir, "pgdata") || c.Major() == "" || c.InitializedAt().IsZero() {
		t.Fatalf("first start: created %t, data dir %q, major %q, initialized %v; want a new cluster in %s/pgdata", c.Created(), c.DataDir(), c.Major(), c.InitializedAt(), dir)
	}
	made := c.InitializedAt()
	if got := queryString(t, ctx, c, `SELECT current_setting('fsync') || '/' || current_setting('synchronous_commit')`); got != "on/on" {
		t.Fatalf("fsync/synchronous_commit = %s, want on/on", got)
	}
	conn := connect(t, ctx, c)
	exec1(t, ctx, conn, `CREATE TABLE kept (v text)`)
	exec1(t, ctx, conn, `INSERT INTO kept VALUES ('survives restart')`)
	_ = conn.Close(ctx)
	stop(t, c)

	if _, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION")); err != nil {
		t.Fatalf("persistent data dir gone after Stop: %v", err)
	}

	c2, second := mustStart(t, ctx, localpg.Options{Dir: dir})
	t.Logf("restart on existing data took %v", second.Round(time.Millisecond))
	if c2.Created() || !c2.InitializedAt().Equal(made) {
		t.Fatalf("restart: created %t, initialized %v; want the cluster of the first start (%v) reused", c2.Created(), c2.InitializedAt(), made)
	}
	if got := queryString(t, ctx, c2, `SELECT v FROM kept`); got != "survives restart" {
		t.Fatalf("after restart got %q", got)
	}
	stop(t, c2)
}

func TestRestartAfterPostmasterKilled(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)

	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})
	conn := connect(t, ctx, c)
	exec1(t, ctx, conn, `CREATE TABLE crashed (v text)`)
	exec1(t, ctx, conn, `INSERT INTO crashed VALUES ('committed before crash')`)

	pid := postmasterPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("Exited not closed after the postmaster was killed")
	}
	if err := c.Stop(ctx); err != nil { // joins the watcher; the crash itself is not Stop's error
		t.Fatalf("Stop after crash: %v", err)
	}

	c2, took := mustStart(t, ctx, localpg.Options{Dir: dir})
	t.Logf("start after crash (with recovery) took %v", took.Round(time.Millisecond))
	if got := queryString(t, ctx, c2, `SELECT v FROM crashed`); got != "committed before crash" {
		t.Fatalf("after crash got %q", got)
	}
	stop(t, c2)
}

func TestRestartAfterOwnerKilled(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)

	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), helperDirEnv+"="+dir)
	owner.Stderr = os.Stderr
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "READY" {
		_ = owner.Process.Kill()
		_ = owner.Wait()
		t.Fatalf("owner helper: %q", line)
	}
	oldPID := postmasterPID(t, dir)
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()

	// Pdeathsig must take the postmaster down with its owner.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(oldPID) {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d survived the SIGKILL of its owner", oldPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); err != nil {
		t.Fatalf("expected a stale postmaster.pid to be left behind: %v", err)
	}

	c, took := mustStart(t, ctx, localpg.Options{Dir: dir})
	t.Logf("start after owner was killed took %v", took.Round(time.Millisecond))
	if got := queryString(t, ctx, c, `SELECT v FROM owned`); got != "before-owner-kill" {
		t.Fatalf("after owner kill got %q", got)
	}
	stop(t, c)
}

func TestFindBinDirMissing(t *testing.T) {
	t.Setenv("YUKTA_PG_BIN", t.TempDir())
	_, err := localpg.FindBinDir()
	if !errors.Is(err, localpg.ErrBinariesNotFound) {
		t.Fatalf("err = %v, want ErrBinariesNotFound", err)
	}
	for _, want := range []string{"apt-get install postgresql", "YUKTA_DATABASE_URL", "YUKTA_PG_BIN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}

	// Without the override the machine's installation must be found; the other
	// tests depend on it and a missing PostgreSQL has to fail, not skip.
	t.Setenv("YUKTA_PG_BIN", "")
	bin, err := localpg.FindBinDir()
	if err != nil {
		t.Fatalf("FindBinDir on this machine: %v", err)
	}
	t.Logf("FindBinDir = %s", bin)
}

func TestVersionMismatch(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})
	stop(t, c)

	versionFile := filepath.Join(dir, "pgdata", "PG_VERSION")
	real, err := os.ReadFile(versionFile) // written by initdb, so it is the binaries' major
	if err != nil {
		t.Fatal(err)
	}
	binMajor := strings.TrimSpace(string(real))
	if err := os.WriteFile(versionFile, []byte("99\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c2, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err == nil {
		_ = c2.Stop(ctx)
		t.Fatal("Start accepted a data dir from PostgreSQL 99")
	}
	for _, want := range []string{"PostgreSQL 99", "PostgreSQL " + binMajor, "pg_upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	t.Logf("mismatch error: %v", err)
}

func TestSecondStartOnLiveDirFails(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})

	c2, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err == nil {
		_ = c2.Stop(ctx)
		t.Fatal("second Start on a live data dir succeeded")
	}
	inUse, ok := errors.AsType[*localpg.DirInUseError](err)
	if !ok || inUse.PID != os.Getpid() {
		t.Fatalf("err = %v, want a DirInUseError naming pid %d", err, os.Getpid())
	}
	for _, want := range []string{dir, fmt.Sprintf("another yukta (pid %d)", os.Getpid()), "--data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	t.Logf("second start error: %v", err)

	// The failed attempt must not have disturbed the running cluster.
	if got := queryString(t, ctx, c, `SELECT 'still up'`); got != "still up" {
		t.Fatal(got)
	}
	select {
	case <-c.Exited():
		t.Fatal("first cluster exited")
	default:
	}
	stop(t, c)
}

func TestLongDirUsesShortSocketDir(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempDir(t), strings.Repeat("long-path-segment-", 6))
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir, Ephemeral: true})
	sock := c.SocketDir()
	if strings.HasPrefix(sock, dir) {
		t.Fatalf("socket dir %s was not moved out of the long path", sock)
	}
	if got := queryString(t, ctx, c, `SELECT 'ok'`); got != "ok" {
		t.Fatal(got)
	}
	stop(t, c)
	for _, p := range []string{sock, dir} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists after Stop (stat err %v)", p, err)
		}
	}
}

func TestStartFailureIncludesServerLog(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var log bytes.Buffer
	dir := tempDir(t)
	// An impossible setting makes postgres exit during startup; the error must carry
	// its explanation even though the caller's log is separate.
	_, err := localpg.Start(ctx, localpg.Options{Dir: dir, Ephemeral: true, MaxConnections: 1 << 30, Log: &log})
	if err == nil {
		t.Fatal("Start succeeded with max_connections=2^30")
	}
	if !strings.Contains(err.Error(), "max_connections") {
		t.Fatalf("error lacks the server's explanation: %v", err)
	}
	if !strings.Contains(log.String(), "max_connections") {
		t.Fatalf("Log writer did not receive server output: %q", log.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ephemeral dir initialized by a failed Start was left behind (stat err %v)", err)
	}
}

func TestRootNeedsTraversableParents(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the server runs as us, so there is nothing to check")
		return
	}
	t.Parallel()
	locked := lockedTempDir(t) // root-owned 0700, like t.TempDir's parent
	_, err := localpg.Start(testCtx(t), localpg.Options{Dir: filepath.Join(locked, "data")})
	if err == nil {
		t.Fatal("Start succeeded below a 0700 root-owned directory")
	}
	t.Logf("traversal error: %v", err)
	if _, err := os.Stat(filepath.Join(locked, "data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Start created the data dir anyway (stat err %v)", err)
	}
	for _, want := range []string{locked, "-rwx------", "/var/lib/yukta"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}

func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// processAlive treats zombies as dead: a killed postmaster orphaned by its owner
// may linger as a zombie until init reaps it, but it no longer runs.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}
