package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The deploy artifacts of issue 15 (Dockerfile, deploy/, compose.yaml) are
// tested here without a container runtime: the entrypoint and the health
// check run as the image runs them, with the image's environment read from
// the Dockerfile. bootstrap/deploy_test.go checks that the names they use are
// real settings.

// dockerfileEnv is the ENV the runtime stage of ../Dockerfile sets.
func dockerfileEnv(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	env := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("Dockerfile: ENV %q is not NAME=value", kv)
			}
			env[k] = v
		}
	}
	if env["YUKTA_DATA_DIR"] == "" {
		t.Fatalf("Dockerfile sets no YUKTA_DATA_DIR: %v", env)
	}
	return env
}

// imageUser is the user the test runs the entrypoint as: like the image's
// non-root user, nobody when the tests run as root, else the current user.
type imageUser struct {
	cred *syscall.Credential // nil: run as ourselves
}

func newImageUser(t *testing.T) imageUser {
	t.Helper()
	if os.Geteuid() != 0 {
		return imageUser{}
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("running as root, the entrypoint test needs the nobody user to stand in for the image's yukta user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return imageUser{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
}

// own gives path to the user (when we are root).
func (u imageUser) own(t *testing.T, path string) {
	t.Helper()
	if u.cred == nil {
		return
	}
	if err := os.Chown(path, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
		t.Fatal(err)
	}
}

func (u imageUser) command(env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: u.cred}
	return cmd
}

// imageLayout lays out, under a fresh folder, what the image holds: bin/
// with yukta, docker-entrypoint.sh and yukta-healthcheck (the Dockerfile's
// COPY lines), and data/, the volume. root is 0711 so another user can
// reach data/ and bin/.
func imageLayout(t *testing.T, u imageUser, yukta string) (root, bin, data string) {
	t.Helper()
	root, err := os.MkdirTemp("", "yukta-e2e-deploy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	bin, data = filepath.Join(root, "bin"), filepath.Join(root, "data")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	u.own(t, data)
	for src, dst := range map[string]string{
		yukta:                            "yukta",
		"../deploy/docker-entrypoint.sh": "docker-entrypoint.sh",
		"../deploy/healthcheck.sh":       "yukta-healthcheck",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, dst), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, bin, data
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestContainerEntrypointReachesReady runs the image's start path without a
// container runtime: docker-entrypoint.sh as a non-root user, with the
// Dockerfile's environment, the data folder standing in for the volume and
// the API key read from a secret file (YUKTA_API_KEY_FILE). The server
// comes up on the embedded PostgreSQL in the volume, on 0.0.0.0; the
// image's HEALTHCHECK command fails before and passes after; the key from
// the file guards the API; yukta replaced the shell (exec), so SIGTERM
// reaches it and it stops cleanly with its cluster.
func TestContainerEntrypointReachesReady(t *testing.T) {
	t.Parallel()
	u := newImageUser(t)
	root, bin, data := imageLayout(t, u, binary(t))
	const key = "deploy-test-key-0123456789abcdef"
	secret := filepath.Join(root, "api_key")
	if err := os.WriteFile(secret, []byte(key+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	u.own(t, secret)

	image := dockerfileEnv(t)
	image["YUKTA_DATA_DIR"] = data
	if pgBin := image["YUKTA_PG_BIN"]; pgBin != "" {
		if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
			// Another PostgreSQL major on this machine: let Yukta find it.
			t.Logf("the image's YUKTA_PG_BIN %s is not here (%v); using this machine's PostgreSQL", pgBin, err)
			delete(image, "YUKTA_PG_BIN")
		}
	}
	port := freePort(t)
	env := []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + data,
		"YUKTA_API_KEY_FILE=" + secret, fmt.Sprintf("YUKTA_ADDR=0.0.0.0:%d", port)}
	for k, v := range image {
		env = append(env, k+"="+v)
	}
	health := func() (int, string) {
		out, err := u.command(env, filepath.Join(bin, "yukta-healthcheck")).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatalf("healthcheck: %v", err)
		}
		return 0, string(out)
	}
	if code, out := health(); code != 1 || !strings.Contains(out, "nothing listens") {
		t.Fatalf("healthcheck with no server: exit %d %q, want 1 and why", code, out)
	}

	began := time.Now()
	cmd := u.command(env, filepath.Join(bin, "docker-entrypoint.sh"))
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "yukta serving on "); ok {
				serving <- a
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		exited <- nil
		if t.Failed() {
			t.Logf("entrypoint log:\n%s", logs.String())
		}
	})
	select {
	case a := <-serving:
		// Go reports a listener on 0.0.0.0 as the dual-stack [::].
		if a != fmt.Sprintf("http://0.0.0.0:%d", port) && a != fmt.Sprintf("http://[::]:%d", port) {
			t.Fatalf("serving on %s, want every address on port %d", a, port)
		}
	case err := <-exited:
		exited <- err
		t.Fatalf("the entrypoint exited before serving: %v\n%s", err, logs.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("no server within 90 s\n%s", logs.String())
	}
	// exec: the entrypoint's process is yukta now, not a shell waiting on it.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); err != nil || filepath.Base(exe) != "yukta" {
		t.Fatalf("the entrypoint's process runs %q (%v), want yukta: the script must exec it", exe, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := health()
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthcheck still failing after 30 s: exit %d %s", code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("entrypoint to a passing HEALTHCHECK (cluster created in the volume): %s", time.Since(began).Round(time.Millisecond))

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path, key string) int {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if c := get("/readyz", ""); c != http.StatusOK {
		t.Fatalf("/readyz: %d", c)
	}
	if c := get("/api/sessions", ""); c != http.StatusUnauthorized {
		t.Fatalf("/api/sessions with no key: %d, want 401 (the key file was not read?)", c)
	}
	if c := get("/api/sessions", key); c != http.StatusOK {
		t.Fatalf("/api/sessions with the key from YUKTA_API_KEY_FILE: %d, want 200", c)
	}
	for _, f := range []string{"pgdata/PG_VERSION", "journal-ed25519.pem"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("the volume has no %s: %v", f, err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("SIGTERM: exit %v, want 0\n%s", err, logs.String())
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the server did not stop within 45 s of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(data, "pgdata", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid left behind (%v): the cluster was not stopped", err)
	}
}

// TestContainerEntrypointChoices: what the entrypoint decides before it
// execs yukta, seen through a stand-in yukta that prints its arguments and
// environment.
func TestContainerEntrypointChoices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stub := `#!/bin/sh
echo "args=$*"
for v in YUKTA_ADDR YUKTA_API_KEY YUKTA_API_KEY_FILE YUKTA_DATABASE_URL PGPASSWORD PGPASSWORD_FILE; do
	eval "echo $v=\${$v-unset}"
done
`
	if err := os.WriteFile(filepath.Join(dir, "yukta"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyFile := secret("key", "k-from-file-0123456789abcdef\n")
	pwFile := secret("pw", "s3cret\n")
	empty := secret("empty", "")
	for _, c := range []struct {
		name     string
		env      []string
		args     []string
		code     int
		want     []string // lines yukta printed
		wantErrs []string // in the entrypoint's stderr
	}{
		{name: "no key: refused, with what to set", code: 2,
			wantErrs: []string{"no API key", "YUKTA_API_KEYS", "YUKTA_API_KEY", "YUKTA_ADDR=127.0.0.1:8080"}},
		{name: "one key: serve on every address", env: []string{"YUKTA_API_KEY=k"},
			want: []string{"args=serve", "YUKTA_ADDR=0.0.0.0:8080"}},
		{name: "a key file", env: []string{"YUKTA_API_KEYS=/run/secrets/api_keys"},
			want: []string{"args=serve", "YUKTA_ADDR=0.0.0.0:8080"}},
		{name: "flags mean serve", args: []string{"--api-keys", "/k", "--log-level", "debug"},
			want: []string{"args=serve --api-keys /k --log-level debug", "YUKTA_ADDR=0.0.0.0:8080"}},
		{name: "loopback on purpose", env: []string{"YUKTA_ADDR=127.0.0.1:8080"},
			want: []string{"args=serve", "YUKTA_ADDR=127.0.0.1:8080"}},
		{name: "--addr given: left to yukta", args: []string{"serve", "--addr=127.0.0.1:9"},
			want: []string{"args=serve --addr=127.0.0.1:9", "YUKTA_ADDR=unset"}},
		{name: "another command needs no key", args: []string{"version"},
			want: []string{"args=version", "YUKTA_ADDR=unset"}},
		{name: "secrets from files", env: []string{"YUKTA_API_KEY_FILE=" + keyFile, "PGPASSWORD_FILE=" + pwFile},
			want: []string{"YUKTA_API_KEY=k-from-file-0123456789abcdef", "YUKTA_API_KEY_FILE=unset", "PGPASSWORD=s3cret", "PGPASSWORD_FILE=unset", "YUKTA_ADDR=0.0.0.0:8080"}},
		{name: "a variable and its file", env: []string{"YUKTA_API_KEY=k", "YUKTA_API_KEY_FILE=" + keyFile}, code: 2,
			wantErrs: []string{"both YUKTA_API_KEY and YUKTA_API_KEY_FILE"}},
		{name: "an unreadable file", env: []string{"YUKTA_DATABASE_URL_FILE=/nonexistent/url"}, code: 2,
			wantErrs: []string{"YUKTA_DATABASE_URL_FILE: cannot read /nonexistent/url"}},
		{name: "an empty file", env: []string{"YUKTA_API_KEY_FILE=" + empty}, code: 2,
			wantErrs: []string{"YUKTA_API_KEY_FILE: " + empty + " is empty"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("../deploy/docker-entrypoint.sh", c.args...)
			cmd.Env = append([]string{"PATH=" + dir + ":/usr/bin:/bin"}, c.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout.String(), stderr.String())
			}
			if c.code != 0 && stdout.Len() > 0 {
				t.Fatalf("yukta ran although the entrypoint refused: %s", stdout.String())
			}
			lines := strings.Split(stdout.String(), "\n")
			for _, w := range c.want {
				if !contains(lines, w) {
					t.Errorf("yukta did not get %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range c.wantErrs {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestSystemdUnitVerifies: systemd's own checker accepts deploy/yukta.service
// without a warning, and its offline security review rates it well.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is needed to check deploy/yukta.service (Debian: apt-get install systemd)")
	}
	unit, err := os.ReadFile("../deploy/yukta.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify wants ExecStart's program to exist: point it at the built binary.
	dir := t.TempDir()
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/yukta", binary(t))
	path := filepath.Join(dir, "yukta.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=true", "--no-pager", path).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for yukta\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security exposure: %.1f (0 best, 10 worst)", exposure)
	if exposure > 2.0 {
		t.Fatalf("exposure %.1f, want at most 2.0 (hardening lost?)\n%s", exposure, out)
	}
}

// TestReleaseBuild runs deploy/release.sh, which `task release` runs, for
// this machine's target (YUKTA_RELEASE_TARGETS lists others, space
// separated, such as the four of a release). Each binary is static, built
// with -trimpath, and carries the version; SHA256SUMS matches.
func TestReleaseBuild(t *testing.T) {
	t.Parallel()
	targets := os.Getenv("YUKTA_RELEASE_TARGETS")
	if targets == "" {
		targets = runtime.GOOS + "/" + runtime.GOARCH
	}
	script, err := os.ReadFile("../deploy/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "TARGETS=${*:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}") {
		t.Fatal("deploy/release.sh no longer builds linux and darwin on amd64 and arm64 by default")
	}
	dist := t.TempDir()
	const version = "v0.0.0-releasetest"
	began := time.Now()
	cmd := exec.Command("./deploy/release.sh", strings.Fields(targets)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION="+version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	t.Logf("release.sh %s: %s", targets, time.Since(began).Round(time.Second))
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("..")
	for _, target := range strings.Fields(targets) {
		goos, goarch, _ := strings.Cut(target, "/")
		name := fmt.Sprintf("yukta-%s-%s-%s", version, goos, goarch)
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatalf("%s: %v\n%s", target, err, out)
		}
		sum := sha256.Sum256(b)
		if line := hex.EncodeToString(sum[:]) + "  " + name; !strings.Contains(string(sums), line+"\n") {
			t.Errorf("SHA256SUMS lacks %q:\n%s", line, sums)
		}
		if !bytes.Contains(b, []byte(version)) {
			t.Errorf("%s: the version %s is not stamped in", name, version)
		}
		if bytes.Contains(b, []byte(repo+"/")) {
			t.Errorf("%s holds the build folder %s: not built with -trimpath", name, repo)
		}
		if goos == "linux" {
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked (it has an interpreter): CGO_ENABLED=0 lost?", name)
				}
			}
		}
		if goos == runtime.GOOS && goarch == runtime.GOARCH {
			v, err := exec.Command(filepath.Join(dist, name), "version").CombinedOutput()
			if err != nil || !strings.Contains(string(v), version) {
				t.Errorf("%s version: %v %q, want %s in it", name, err, v, version)
			}
		}
	}
}
