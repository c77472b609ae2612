// Package localpg starts and owns a private PostgreSQL server built from the
// binaries installed on the machine.
//
// Yukta keeps all of its state in PostgreSQL. Asking every user (and every test run)
// to provision a server first would make "just run yukta serve" impossible, so this
// package lets Yukta run its own: a persistent cluster in the data folder for
// `yukta serve`, reused on the next start, and a throwaway cluster for tests that
// starts in about a second and is deleted on Stop. It runs `postgres` directly
// rather than through pg_ctl so that we hold the PID, the server dies with us, and it
// listens only on a private unix socket so clusters never fight over TCP ports.
package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	pgPort     = 5432
	socketFile = ".s.PGSQL.5432"
	// maxSocketPath keeps a margin under the kernel's 108-byte sun_path limit;
	// postgres refuses longer socket paths outright.
	maxSocketPath = 100

	defaultMaxConnections = 100

	startTimeout          = 60 * time.Second
	connectAttemptTimeout = 2 * time.Second
	pollInterval          = 20 * time.Millisecond
	// retryDelay paces restarts while a killed predecessor winds down, and
	// retryWindow bounds that wait so a process nobody reaps cannot stall us for
	// the whole start timeout.
	retryDelay  = 250 * time.Millisecond
	retryWindow = 15 * time.Second

	// orphanGrace is how long the backends of a killed postmaster get to
	// notice and exit before we kill them (they normally take milliseconds).
	orphanGrace = 5 * time.Second

	fastShutdownGrace      = 10 * time.Second
	immediateShutdownGrace = 5 * time.Second
	// pipeDrainDelay bounds how long we wait for orphaned backends to release the
	// output pipe after the postmaster itself has gone.
	pipeDrainDelay = 5 * time.Second
)

// errPredecessorExiting marks a start that failed only because a previous server on
// the same data dir is still on its way out: its backends still hold the shared
// memory, or the killed postmaster is a zombie its new parent has not reaped yet
// (postgres counts a zombie as alive). Both clear up by themselves, so Start retries
// for a while.
var errPredecessorExiting = errors.New("localpg: a previous PostgreSQL server on this data directory is still shutting down")

// Options configures Start. The zero value plus Dir gives a durable cluster.
type Options struct {
	// Dir is the cluster folder; the data lives in Dir/pgdata and the socket in
	// Dir/run. It is created if missing.
	Dir string
	// BinDir holds initdb and postgres; empty means FindBinDir.
	BinDir string
	// Ephemeral trades durability for speed (no fsync, no full-page writes) and
	// removes Dir on Stop; meant for tests.
	Ephemeral bool
	// Log receives the server's output. Nil discards it; the last 64 KiB are kept
	// regardless so a failed start can explain itself.
	Log io.Writer
	// MaxConnections is the server's max_connections; 0 means 100.
	MaxConnections int
	// Settings are extra server settings (name -> value) passed with -c,
	// e.g. for diagnostics; they cannot override the durability settings.
	Settings map[string]string
}

// Cluster is a running PostgreSQL server owned by this process. It must be stopped
// with Stop, which also reaps the process and joins the goroutine watching it.
type Cluster struct {
	dir          string
	dataDir      string
	socketDir    string
	tmpSocketDir bool // socketDir came from os.MkdirTemp and is ours to delete
	binDir       string
	ephemeral    bool
	settings     map[string]string
	args         []string // the server's command line, reused by Restart
	owner        *osUser  // nil when not root
	log          *logTail
	lock         *dirLock
	major        string // the PostgreSQL major of the binaries and the data
	created      bool   // Start ran initdb: the cluster is new
	// proc is the current server process; Restart replaces it.
	proc atomic.Pointer[process]

	// stopMu serializes Stop and Restart.
	stopMu   sync.Mutex
	stopping atomic.Bool // set as Stop begins, so Supervise can tell a stop from a crash
	stopped  bool
	stopErr  error
}

// process is one postgres invocation plus the goroutines that wait for it and
// copy its output. They are apart because the output outlives the
// postmaster while its orphaned backends still hold the pipe: Exited must
// say at once that the server is gone, not when its last backend is.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's result; written before exited is closed

	out     *os.File      // the read end of the pipe every server process writes to
	drained chan struct{} // closed when the copy of out has ended
}

// StartEphemeral starts a throwaway cluster for tests. The folder comes from
// os.MkdirTemp rather than t.TempDir because the latter's parent is a root-owned
// 0700 directory the postgres OS user cannot enter when tests run as root.
func StartEphemeral(ctx context.Context) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "yukta-pg-")
	if err != nil {
		return nil, fmt.Errorf("localpg: creating a temporary cluster folder: %w", err)
	}
	c, err := Start(ctx, Options{Dir: dir, Ephemeral: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// Start initializes the cluster if Dir/pgdata does not exist, refuses data written
// by a different PostgreSQL major (the server would refuse it later, less clearly),
// starts postgres on a private unix socket and returns once it accepts connections.
// ctx bounds only the startup; the server keeps running until Stop.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("localpg: Options.Dir is empty")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	binDir := o.BinDir
	if binDir == "" {
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if !hasServerBinaries(binDir) {
		return nil, fmt.Errorf("localpg: BinDir %q does not contain executable initdb and postgres: %w", binDir, ErrBinariesNotFound)
	}
	major, err := serverMajor(ctx, binDir)
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = defaultMaxConnections
	}

	c := &Cluster{
		dir:       dir,
		dataDir:   filepath.Join(dir, "pgdata"),
		binDir:    binDir,
		ephemeral: o.Ephemeral,
		settings:  o.Settings,
		owner:     owner,
		log:       &logTail{out: o.Log},
	}
	initialized, ok := false, false
	defer func() {
		if ok {
			return
		}
		if c.tmpSocketDir {
			_ = os.RemoveAll(c.socketDir)
		}
		// Only throw away what this call created: Dir may hold another live
		// cluster (that is one way to get here).
		if c.ephemeral && initialized {
			_ = os.RemoveAll(c.dir)
		}
		c.lock.unlock()
	}()

	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	// Lock before touching anything inside: the loser of two starts on one
	// folder must leave it exactly as the winner needs it.
	if c.lock, err = lockDir(c.dir, c.owner); err != nil {
		return nil, err
	}
	if err := c.prepareSocketDir(); err != nil {
		return nil, err
	}
	c.major = major
	if _, err := os.Stat(c.dataDir); errors.Is(err, fs.ErrNotExist) {
		initialized, c.created = true, true
		if err := c.initdb(ctx, major); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if err := c.checkVersion(major); err != nil {
		return nil, err
	}
	// A server that died without shutting down (ours, killed with us) may
	// have left backends and a postmaster.pid behind.
	if err := c.settle(ctx); err != nil {
		return nil, err
	}
	c.args = c.serverArgs(maxConns)
	if err := c.run(ctx, c.args); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// prepareDir creates Dir and, when root, hands it to the server user. Parents
// get 0755 so that creating them cannot itself block traversal.
func (c *Cluster) prepareDir() error {
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o755); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := checkTraversable(c.dir, c.owner); err != nil {
		return err
	}
	if err := os.Mkdir(c.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	return c.owner.chown(c.dir)
}

// prepareSocketDir creates the socket dir: Dir/run, or a short temporary
// folder when that path would be too long for a unix socket.
func (c *Cluster) prepareSocketDir() error {
	c.socketDir = filepath.Join(c.dir, "run")
	if len(c.socketDir)+1+len(socketFile) > maxSocketPath {
		sock, err := os.MkdirTemp("", "yukta-sock-")
		if err != nil {
			return fmt.Errorf("localpg: creating a short socket dir: %w", err)
		}
		c.socketDir, c.tmpSocketDir = sock, true
		if len(sock)+1+len(socketFile) > maxSocketPath {
			return fmt.Errorf("localpg: socket path %s/%s is too long for a unix socket even in the temp dir; set TMPDIR to a shorter path",
				sock, socketFile)
		}
	} else if err := os.Mkdir(c.socketDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	// Only the server user (and root) may connect: auth is trust, so the directory
	// permissions are the access control.
	if err := os.Chmod(c.socketDir, 0o700); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := c.owner.chown(c.socketDir); err != nil {
		return err
	}
	return checkTraversable(c.socketDir, c.owner)
}

// initdb builds the cluster in a scratch folder and renames it into place, so an
// interrupted initdb never leaves a half-made pgdata that later starts would trip on.
func (c *Cluster) initdb(ctx context.Context, major string) error {
	stale, _ := filepath.Glob(filepath.Join(c.dir, "pgdata.initdb-*"))
	for _, s := range stale {
		_ = os.RemoveAll(s)
	}
	tmp, err := os.MkdirTemp(c.dir, "pgdata.initdb-")
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // no-op after a successful rename
	if err := c.owner.chown(tmp); err != nil {
		return err
	}

	args := []string{"-D", tmp, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"}
	if n, err := strconv.Atoi(major); err == nil && n >= 14 {
		args = append(args, "--no-instructions") // the pg_ctl hint would only mislead in our log
	}
	if c.ephemeral {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"), args...)
	c.prepare(cmd)
	// initdb runs postgres in bootstrap mode as a child; cancel the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeDrainDelay
	cmd.Stdout, cmd.Stderr = c.log, c.log
	mark := c.log.mark()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("localpg: initdb failed (%v); output:\n%s", err, strings.TrimSpace(c.log.since(mark)))
	}
	if err := os.Rename(tmp, c.dataDir); err != nil {
		return fmt.Errorf("localpg: moving the new cluster into place: %w", err)
	}
	if !c.ephemeral {
		// Make the rename itself durable, or a power cut could lose a synced cluster.
		if d, err := os.Open(c.dir); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
	}
	return nil
}

func (c *Cluster) checkVersion(major string) error {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localpg: %s exists but is not a PostgreSQL data directory (no PG_VERSION); move it away or use another --data-dir", c.dataDir)
	}
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if have := strings.TrimSpace(string(b)); have != major {
		return fmt.Errorf("localpg: data directory %s was created by PostgreSQL %s, but the server binaries in %s are PostgreSQL %s; "+
			"upgrade the data with pg_upgrade (or point YUKTA_PG_BIN at PostgreSQL %s binaries), or use another --data-dir",
			c.dataDir, have, c.binDir, major, have)
	}
	return nil
}

func (c *Cluster) serverArgs(maxConns int) []string {
	args := []string{
		"-D", c.dataDir,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + gucQuote(c.socketDir),
		"-c", "port=" + strconv.Itoa(pgPort),
		"-c", "max_connections=" + strconv.Itoa(maxConns),
	}
	// Given on the command line, these beat postgresql.conf and ALTER SYSTEM, so a
	// persistent cluster cannot silently lose durability.
	durability := "on"
	if c.ephemeral {
		durability = "off"
	}
	for _, name := range slices.Sorted(maps.Keys(c.settings)) {
		switch name {
		case "fsync", "synchronous_commit", "full_page_writes", "listen_addresses", "unix_socket_directories", "port":
			continue
		}
		args = append(args, "-c", name+"="+c.settings[name])
	}
	for _, guc := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		args = append(args, "-c", guc+"="+durability)
	}
	return args
}

// run starts postgres and waits until it accepts connections. It retries while the
// children of a killed predecessor still hold its shared memory, which is what a
// restart right after a crash of the owning process looks like.
func (c *Cluster) run(ctx context.Context, args []string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	retryUntil := time.Now().Add(retryWindow)
	for {
		mark := c.log.mark()
		p, err := c.spawn(args)
		if err != nil {
			return err
		}
		err = c.waitReady(ctx, p, mark)
		if err == nil {
			c.proc.Store(p)
			return nil
		}
		p.kill()
		p.release()
		if !errors.Is(err, errPredecessorExiting) || time.Now().After(retryUntil) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryDelay):
		}
	}
}

func (c *Cluster) spawn(args []string) (*process, error) {
	cmd := exec.Command(filepath.Join(c.binDir, "postgres"), args...)
	c.prepare(cmd)
	// Our own pipe rather than exec's: with a writer that is not a file, Wait
	// would also wait for every backend to close its end.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	_ = w.Close() // the server processes now hold the only write ends
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("localpg: starting %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), out: r, drained: make(chan struct{})}
	go func() { // joined by release
		defer close(p.drained)
		_, _ = io.Copy(c.log, r)
	}()
	go func() { // joined via p.exited by Stop, Restart or run's failure path
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// awaitOutput waits, for a while, until the server's output is all copied:
// a server that failed to start says why in its last lines.
func (p *process) awaitOutput() {
	select {
	case <-p.drained:
	case <-time.After(pipeDrainDelay):
	}
}

// release joins the output copier of an exited process. The copy ends by
// itself once the last server process has closed its output; backends that
// outlive their postmaster get pipeDrainDelay before the pipe is cut.
// Calling it again is harmless.
func (p *process) release() {
	<-p.exited
	select {
	case <-p.drained:
	case <-time.After(pipeDrainDelay):
		_ = p.out.SetReadDeadline(time.Now())
		<-p.drained
	}
	_ = p.out.Close()
}

// prepare isolates a child from our environment and ties its lifetime to ours.
// Setpgid keeps a terminal's Ctrl-C away from postgres so we can stop it in order;
// Pdeathsig kills it if we die (Go applies it after the setuid, so it survives the
// credential change).
func (c *Cluster) prepare(cmd *exec.Cmd) {
	cmd.Dir = c.dir // our cwd may be unreadable for the server user
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=" + c.dir}
	cmd.SysProcAttr = sysProcAttr(c.owner.credential())
}

func (c *Cluster) waitReady(ctx context.Context, p *process, mark int64) error {
	dsn := c.DSN("postgres")
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	err := errors.New("postmaster.pid does not name our server yet")
	for {
		select {
		case <-p.exited:
			p.awaitOutput()
			return c.exitError(p, mark)
		default:
		}
		// Connect only once the data dir lock names our process: the socket dir may
		// be shared with a live server on the same Dir, and answering for it would
		// make a doomed second start look successful. Waiting for its "ready" status
		// also spares the server log a FATAL "starting up" line per poll.
		if pid, status := readLockFile(c.dataDir); pid == p.cmd.Process.Pid && (status == "" || status == "ready") {
			actx, cancel := context.WithTimeout(ctx, connectAttemptTimeout)
			var conn *pgx.Conn
			conn, err = pgx.Connect(actx, dsn)
			cancel()
			if err == nil {
				_ = conn.Close(ctx)
				return nil
			}
		}
		select {
		case <-p.exited:
			p.awaitOutput()
			return c.exitError(p, mark)
		case <-ctx.Done():
			return fmt.Errorf("localpg: waiting for postgres to accept connections on %s: %w (last attempt: %v); server log:\n%s",
				c.socketDir, ctx.Err(), err, strings.TrimSpace(c.log.since(mark)))
		case <-tick.C:
		}
	}
}

// exitError turns the server's last words into an error a user can act on.
func (c *Cluster) exitError(p *process, mark int64) error {
	out := strings.TrimSpace(c.log.since(mark))
	switch {
	case strings.Contains(out, "lock file") && strings.Contains(out, "already exists"):
		if holder, _ := readLockFile(c.dataDir); holder > 0 && !processRunning(holder) {
			return fmt.Errorf("%w (PID %d has exited but is not reaped yet); postgres said:\n%s", errPredecessorExiting, holder, out)
		}
		return fmt.Errorf("localpg: %s is already in use by another running PostgreSQL server "+
			"(is another yukta using the same data dir?); postgres said:\n%s", c.dataDir, out)
	case strings.Contains(out, "pre-existing shared memory block"):
		return fmt.Errorf("%w (its backends still hold shared memory); postgres said:\n%s", errPredecessorExiting, out)
	}
	return fmt.Errorf("localpg: postgres exited during startup (%v); server log:\n%s", p.err, out)
}

// DSN returns a key/value connection string for dbname over the private socket.
// Key/value form is used because a socket directory is a path, which URLs would
// need to percent-encode.
func (c *Cluster) DSN(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable",
		dsnQuote(c.socketDir), pgPort, dsnQuote(dbname))
}

// Dir is the cluster folder (absolute); the data is in DataDir.
func (c *Cluster) Dir() string { return c.dir }

// DataDir is the PostgreSQL data directory, Dir/pgdata.
func (c *Cluster) DataDir() string { return c.dataDir }

// Major is the PostgreSQL major version of the cluster ("16").
func (c *Cluster) Major() string { return c.major }

// Created reports whether Start made the cluster (ran initdb); false means
// it reused the data an earlier start left in DataDir.
func (c *Cluster) Created() bool { return c.created }

// InitializedAt is when the cluster's data directory was made (the time
// of its PG_VERSION file); zero when it cannot be read.
func (c *Cluster) InitializedAt() time.Time {
	fi, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION"))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// SocketDir is the directory holding the server's unix socket, for clients that
// take host and port separately (psql -h).
func (c *Cluster) SocketDir() string { return c.socketDir }

// Exited is closed when the postgres process has exited for whatever reason, so an
// owner can notice a crash instead of discovering it on the next query. It
// watches the current process: after a Restart, call it again.
func (c *Cluster) Exited() <-chan struct{} { return c.proc.Load().exited }

// Stop shuts the server down and always reaps it, so no goroutine or process
// outlives the Cluster. It asks for a fast shutdown (SIGINT: roll back sessions,
// checkpoint), escalates to an immediate shutdown (SIGQUIT) after 10 s and to
// SIGKILL of the whole process group after 5 s more or when ctx ends; escalations
// are reported as an error because the next start then runs crash recovery. A server
// that had already exited is not an error here; Exited is the place to watch for
// crashes. Ephemeral clusters lose Dir afterwards. Stop is idempotent and safe to
// call concurrently; later calls return the first call's result. It waits for a
// Restart in progress, so end Supervise (cancel its context) first.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopping.Store(true)
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	var errs []error
	p := c.proc.Load()
	if err := p.shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	p.release()
	if c.tmpSocketDir {
		if err := os.RemoveAll(c.socketDir); err != nil {
			errs = append(errs, fmt.Errorf("localpg: %w", err))
		}
	}
	if c.ephemeral {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("localpg: removing ephemeral cluster: %w", err))
		}
	}
	c.lock.unlock() // last: the folder is ours until the server is down
	c.stopErr = errors.Join(errs...)
	return c.stopErr
}

func (p *process) shutdown(ctx context.Context) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if p.waitExit(ctx, fastShutdownGrace) {
		return nil
	}
	if ctx.Err() == nil {
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		if p.waitExit(ctx, immediateShutdownGrace) {
			return fmt.Errorf("localpg: postgres ignored fast shutdown for %v; used immediate shutdown (SIGQUIT), so the next start runs crash recovery",
				fastShutdownGrace)
		}
	}
	p.kill()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localpg: stop interrupted (%w); killed postgres (SIGKILL), so the next start runs crash recovery", err)
	}
	return errors.New("localpg: postgres ignored SIGINT and SIGQUIT; killed it (SIGKILL), so the next start runs crash recovery")
}

func (p *process) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// kill SIGKILLs the postmaster's process group and waits for the watcher
// goroutine. Backends lead groups of their own (postgres calls setsid in
// each child), so they are not hit: they see their postmaster die and exit,
// and settle waits for any that linger before the next start.
func (p *process) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// readLockFile returns the postmaster PID (0 if unknown) and its status ("starting",
// "ready", ...; empty if not written yet) from the data dir lock file.
func readLockFile(dataDir string) (pid int, status string) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, ""
	}
	lines := strings.Split(string(b), "\n")
	pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	const statusLine = 7 // LOCK_FILE_LINE_PM_STATUS, 1-based 8
	if len(lines) > statusLine {
		status = strings.TrimSpace(lines[statusLine])
	}
	return pid, status
}

// dsnQuote quotes a key/value DSN value when needed (paths may contain spaces).
func dsnQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\r\n\v\f'\\") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// gucQuote quotes one entry of a list-valued setting such as
// unix_socket_directories, where a comma would otherwise split the path.
func gucQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
