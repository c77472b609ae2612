package access_test

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// WORKER parses in any case, is valid, and stands outside the order: it
// is at least nothing and nothing is at least it.
func TestWorkerRoleOutsideTheOrder(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"WORKER", "worker", " Worker\t"} {
		if r, err := access.ParseRole(in); err != nil || r != access.Worker {
			t.Errorf("ParseRole(%q): got %s, %v, want WORKER", in, r, err)
		}
	}
	if !access.Worker.Valid() || access.Worker.Ordered() || access.Worker.String() != "WORKER" {
		t.Errorf("WORKER: valid %v, ordered %v, %q", access.Worker.Valid(), access.Worker.Ordered(), access.Worker)
	}
	for _, r := range access.AllRoles() {
		if access.Worker.AtLeast(r) || r.AtLeast(access.Worker) {
			t.Errorf("AtLeast between WORKER and %s: got true, want false", r)
		}
	}
	if slices.Contains(access.Roles(), access.Worker) || !slices.Equal(access.AllRoles(), []access.Role{access.Viewer, access.Operator, access.Admin, access.Worker}) {
		t.Errorf("Roles() %v, AllRoles() %v", access.Roles(), access.AllRoles())
	}
	_, err := access.ParseRole("ROOT")
	if err == nil || !strings.Contains(err.Error(), "WORKER (only take and answer tasks of worker queues") {
		t.Errorf("ParseRole(ROOT): %v, want the roles listed with WORKER", err)
	}
}

// A WORKER key may do the worker operations and nothing else, with a
// refusal that names its role and what it may do; every other role,
// ADMIN and the anonymous ADMIN included, is refused the worker
// operations with "use a key with the role WORKER".
func TestWorkerCan(t *testing.T) {
	t.Parallel()
	w, err := access.NewKeyPrincipal("runner", access.Worker, nil, []string{"gpu", "build"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Can(access.WorkTasks, ""); err != nil {
		t.Fatalf("WORKER WorkTasks: %v", err)
	}
	for _, op := range access.Operations() {
		if op == access.WorkTasks {
			continue
		}
		err := w.Can(op, "alpha")
		var fe *access.ForbiddenError
		if !errors.As(err, &fe) || !errors.Is(err, access.ErrForbidden) {
			t.Fatalf("WORKER %s: got %v, want a ForbiddenError", op, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "key:runner has the role WORKER and cannot ") ||
			!strings.Contains(msg, "a WORKER key may only take and answer tasks of worker queues, through the worker API; use a key with the role ") {
			t.Errorf("WORKER %s: %q", op, msg)
		}
	}
	if got, want := w.Can(access.ReadSessions, "").Error(), "key:runner has the role WORKER and cannot read sessions: a WORKER key may only take and answer tasks of worker queues, through the worker API; use a key with the role VIEWER or OPERATOR or ADMIN"; got != want {
		t.Errorf("WORKER ReadSessions:\ngot  %s\nwant %s", got, want)
	}
	if got, want := w.Can(access.ManageAPIKeys, "").Error(), "key:runner has the role WORKER and cannot manage API keys: a WORKER key may only take and answer tasks of worker queues, through the worker API; use a key with the role ADMIN"; got != want {
		t.Errorf("WORKER ManageAPIKeys:\ngot  %s\nwant %s", got, want)
	}
	for _, p := range []access.Principal{mustPrincipal(t, "root", access.Admin, nil), mustPrincipal(t, "ops", access.Operator, nil),
		mustPrincipal(t, "dash", access.Viewer, nil)} {
		err := p.Can(access.WorkTasks, "")
		if !errors.Is(err, access.ErrForbidden) {
			t.Fatalf("%s WorkTasks: %v, want forbidden", p, err)
		}
		if want := p.Actor() + " has the role " + p.Role().String() + " and cannot take and answer tasks of worker queues; use a key with the role WORKER"; err.Error() != want {
			t.Errorf("%s WorkTasks:\ngot  %s\nwant %s", p, err, want)
		}
	}
	// Open mode (no keys, loopback) opens the worker API as every surface.
	if err := access.Anonymous().Can(access.WorkTasks, ""); err != nil {
		t.Errorf("open mode WorkTasks: %v", err)
	}
	if err := access.SupervisorPrincipal("s1").Can(access.WorkTasks, ""); !errors.Is(err, access.ErrForbidden) {
		t.Errorf("a supervisor WorkTasks: %v", err)
	}
}

// A session-limited WORKER key polls across sessions (the poll filters to
// its sessions) and is refused a session outside its list as unknown.
func TestWorkerSessionsAndQueues(t *testing.T) {
	t.Parallel()
	w, err := access.NewKeyPrincipal("runner", access.Worker, []string{"beta", "alpha"}, []string{"gpu", "build"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Can(access.WorkTasks, ""); err != nil {
		t.Errorf("limited WORKER across sessions: %v", err)
	}
	if err := w.Can(access.WorkTasks, "alpha"); err != nil {
		t.Errorf("limited WORKER on its session: %v", err)
	}
	if err := w.Can(access.WorkTasks, "gamma"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Errorf("limited WORKER on another session: %v, want not found", err)
	}
	if !slices.Equal(w.Queues(), []string{"build", "gpu"}) || !slices.Equal(w.Sessions(), []string{"alpha", "beta"}) {
		t.Errorf("queues %v, sessions %v", w.Queues(), w.Sessions())
	}
	for q, want := range map[string]bool{"build": true, "gpu": true, "etl": false, "": false, "Build": false} {
		if got := w.MayUseQueue(q); got != want {
			t.Errorf("MayUseQueue(%q): got %v, want %v", q, got, want)
		}
	}
	all, _ := access.NewKeyPrincipal("any", access.Worker, nil, nil)
	if all.Queues() != nil || !all.MayUseQueue("anything") {
		t.Errorf("unlimited WORKER: queues %v, may use anything %v", all.Queues(), all.MayUseQueue("anything"))
	}
	for _, p := range []access.Principal{mustPrincipal(t, "root", access.Admin, nil), access.Anonymous(), {}} {
		if p.MayUseQueue("build") || p.Queues() != nil {
			t.Errorf("%q may use a queue", p.Actor())
		}
	}
	// A queue list is refused on every other role, at "queues".
	for _, r := range access.Roles() {
		_, err := access.NewKeyPrincipal("x", r, nil, []string{"build"})
		if got := violations(t, err)["queues"]; !strings.Contains(got, "only for a WORKER key") || !strings.Contains(got, r.String()) {
			t.Errorf("%s with queues: %q", r, got)
		}
	}
	for _, c := range []struct {
		queues []string
		want   string
	}{
		{[]string{}, "needs at least one queue name"},
		{[]string{"a", "a"}, `queue "a" is listed twice`},
		{[]string{"Bad Queue"}, `"Bad Queue" is not a queue name`},
	} {
		_, err := access.NewKeyPrincipal("x", access.Worker, nil, c.queues)
		if got := violations(t, err)["queues"]; !strings.Contains(got, c.want) {
			t.Errorf("queues %q: %q, want %q", c.queues, got, c.want)
		}
	}
}

func TestValidateQueueName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "build", "gpu.large", "q_1-2", "0", strings.Repeat("q", access.MaxQueueNameLen)} {
		if err := access.ValidateQueueName(ok); err != nil {
			t.Errorf("ValidateQueueName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Build", "-q", ".q", "_q", "a b", "a/b", "a:b", "é", strings.Repeat("q", access.MaxQueueNameLen+1), "q\n"} {
		err := access.ValidateQueueName(bad)
		if !errors.Is(err, access.ErrQueueName) || !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "queue names are 1 to 64 lowercase letters") {
			t.Errorf("ValidateQueueName(%q): %v", bad, err)
		}
	}
	// A long name is shortened where it is quoted.
	if err := access.ValidateQueueName(strings.Repeat("Q", 200)); strings.Contains(err.Error(), strings.Repeat("Q", 60)) {
		t.Errorf("the error repeats a long name: %v", err)
	}
}

// Key-file lines with a queue list: on a WORKER key, in either order with
// a session list; refused on other roles and when malformed, each at its
// line and field; no secret repeated.
func TestKeyFileQueues(t *testing.T) {
	t.Parallel()
	file := "w1 WORKER queues=gpu,build " + secretCI + "\n" +
		"w2 worker sessions=etl queues=etl " + secretDash + "\n" +
		"w3 WORKER queues=a sessions=web,etl " + sha(secretAlice) + "\n" +
		"w4 WORKER sessions=etl " + sha(secretCI+"4")
	specs, err := access.ParseKeyFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []access.KeySpec{
		{Name: "w1", Role: access.Worker, Queues: []string{"build", "gpu"}, Hash: sha256.Sum256([]byte(secretCI))},
		{Name: "w2", Role: access.Worker, Sessions: []string{"etl"}, Queues: []string{"etl"}, Hash: sha256.Sum256([]byte(secretDash))},
		{Name: "w3", Role: access.Worker, Sessions: []string{"etl", "web"}, Queues: []string{"a"}, Hash: sha256.Sum256([]byte(secretAlice))},
		{Name: "w4", Role: access.Worker, Sessions: []string{"etl"}, Hash: sha256.Sum256([]byte(secretCI + "4"))},
	}
	for i := range want {
		g := specs[i]
		if g.Name != want[i].Name || g.Role != want[i].Role || g.Hash != want[i].Hash || !slices.Equal(g.Sessions, want[i].Sessions) ||
			!slices.Equal(g.Queues, want[i].Queues) || (g.Queues == nil) != (want[i].Queues == nil) {
			t.Errorf("key %d: got %+v, want %+v", i, g, want[i])
		}
	}
	ring, err := access.NewKeyring(specs)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ring.Authenticate(secretCI)
	if !ok || p.Role() != access.Worker || !p.MayUseQueue("gpu") || p.MayUseQueue("etl") {
		t.Fatalf("w1: %v %s %v", ok, p.Role(), p.Queues())
	}

	plain := func(i int) string { return "queueSecretNumber" + string(rune('a'+i)) + "-abcdefghijklmn" }
	lines := []string{
		/* 1 */ "v VIEWER queues=build " + plain(1),
		/* 2 */ "a ADMIN sessions=etl queues=build " + plain(2),
		/* 3 */ "w WORKER queues= " + plain(3),
		/* 4 */ "w4 WORKER queues=Build,,ok,ok " + plain(4),
		/* 5 */ "w5 WORKER queues=a queues=b " + plain(5),
		/* 6 */ "w6 WORKER queues=a",
		/* 7 */ "w7 WORKER queues=a sessions=etl " + plain(7) + " extra",
		/* 8 */ "w8 WORKER queues=" + plain(8),
	}
	_, err = access.ParseKeyFile([]byte(strings.Join(lines, "\n")))
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("ParseKeyFile: %v", err)
	}
	const form = "name ROLE [sessions=a,b] [queues=q1,q2] secret"
	wantV := []struct{ path, says string }{
		{"line 1", "queues= is only for a WORKER key (it limits the queues the key may take tasks from), and this key's role is VIEWER; leave the list out, or make the role WORKER"},
		{"line 2", "queues= is only for a WORKER key (it limits the queues the key may take tasks from), and this key's role is ADMIN; leave the list out, or make the role WORKER"},
		{"line 3", "queues= needs at least one queue name; leave the list out to allow every queue"},
		{"line 4", `in queues=, "Build" is not a queue name; queue names are 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (for example build or gpu.large)`},
		{"line 4", `in queues=, "" is not a queue name; queue names are 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (for example build or gpu.large)`},
		{"line 4", `in queues=, queue "ok" is listed twice; list it once`},
		{"line 5", "a list is given twice; give sessions= and queues= at most once each: " + form},
		{"line 6", "the line ends with a list and has no secret; put the secret last: " + form},
		{"line 7", "a key line has at most five fields: " + form + "; a secret cannot contain spaces, and a comment must start its own line"},
		{"line 8", "the line ends with a list and has no secret; put the secret last: " + form},
	}
	for i := range max(len(wantV), len(ve.Violations)) {
		var got fault.Violation
		if i < len(ve.Violations) {
			got = ve.Violations[i]
		}
		if i >= len(wantV) || got.Path != wantV[i].path || got.Message != wantV[i].says {
			var w struct{ path, says string }
			if i < len(wantV) {
				w = wantV[i]
			}
			t.Errorf("violation %d:\ngot  %s: %s\nwant %s: %s", i, got.Path, got.Message, w.path, w.says)
		}
	}
	assertNoSecret(t, "the error", err.Error(), plain(1), plain(2), plain(3), plain(4), plain(5), plain(7), plain(8))
	// NewKeySpec refuses a secret that starts like a queue list.
	if _, err := access.NewKeySpec("k", access.Admin, nil, "queues="+plain(9)); err == nil || !strings.Contains(err.Error(), "cannot start with queues=") {
		t.Errorf("NewKeySpec with a queues= secret: %v", err)
	}
}

// A stored key carries its queue list through creation, rotation, the
// principal and the record; a queue list on another role is refused at
// "queues" with the other fields' problems.
func TestAPIKeyQueues(t *testing.T) {
	t.Parallel()
	k, _ := mustAPIKey(t, access.APIKeySpec{Name: "runner", Role: "WORKER", Sessions: []string{"alpha"}, Queues: []string{"gpu", "build"}})
	if !slices.Equal(k.Queues(), []string{"build", "gpu"}) || k.Role() != access.Worker {
		t.Fatalf("key %v %v", k.Role(), k.Queues())
	}
	if p := k.Principal(); !p.MayUseQueue("gpu") || p.MayUseQueue("etl") || !p.SessionVisible("alpha") || p.SessionVisible("beta") || p.Can(access.ReadSessions, "alpha") == nil {
		t.Fatalf("principal %v %v", p.Queues(), p.Sessions())
	}
	r, _, err := k.Rotate(rand.Reader, keyAt, "key:admin", "rest")
	if err != nil || !slices.Equal(r.Queues(), k.Queues()) {
		t.Fatalf("rotated %v %v", r.Queues(), err)
	}
	back := access.RestoreAPIKey(access.APIKeyRecord{Name: k.Name(), Role: k.Role(), Queues: k.Queues(), Hash: k.Hash()})
	if !slices.Equal(back.Queues(), k.Queues()) {
		t.Fatalf("restored %v", back.Queues())
	}
	all, _ := mustAPIKey(t, access.APIKeySpec{Name: "any", Role: "worker"})
	if all.Queues() != nil || !all.Principal().MayUseQueue("x") {
		t.Fatal("a WORKER key without a list may use every queue")
	}
	_, _, err = access.NewAPIKey(access.APIKeySpec{Name: "v", Role: "VIEWER", Queues: []string{"build"}, TTL: "x"}, rand.Reader, keyAt, "", "")
	vs := violations(t, err)
	if !strings.Contains(vs["queues"], "only for a WORKER key") || vs["ttl"] == "" {
		t.Fatalf("violations %v", vs)
	}
	_, _, err = access.NewAPIKey(access.APIKeySpec{Name: "w", Role: "WORKER", Queues: []string{"A B"}}, rand.Reader, keyAt, "", "")
	if !strings.Contains(violations(t, err)["queues"], `"A B" is not a queue name`) {
		t.Fatalf("bad queue: %v", err)
	}
}

// The key file shown in docs/configuration.md parses, and its WORKER key
// has the queue list the page says.
func TestDocumentedKeyFileParses(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "#### Key file")
	if !ok {
		t.Fatal("docs/configuration.md has no Key file section")
	}
	_, block, ok := strings.Cut(after, "```text\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the Key file section has no text block")
	}
	specs, err := access.ParseKeyFile([]byte(block))
	if err != nil {
		t.Fatalf("the documented key file: %v", err)
	}
	var worker *access.KeySpec
	for i := range specs {
		if specs[i].Role == access.Worker {
			worker = &specs[i]
		}
	}
	if len(specs) != 4 || worker == nil || !slices.Equal(worker.Queues, []string{"gpu", "render"}) {
		t.Fatalf("the documented key file: %+v", specs)
	}
}

// CanUseQueues: a WORKER key may name the queues of its list (any, without
// one); a queue outside it is forbidden, naming its place; a bad name is
// invalid at its place; another role gets the role's refusal.
func TestCanUseQueues(t *testing.T) {
	t.Parallel()
	w, _ := access.NewKeyPrincipal("runner", access.Worker, nil, []string{"gpu", "build"})
	if err := w.CanUseQueues([]string{"build", "gpu"}); err != nil {
		t.Fatalf("its own queues: %v", err)
	}
	if err := w.CanUseQueues(nil); err != nil {
		t.Fatalf("no queue: %v", err)
	}
	err := w.CanUseQueues([]string{"gpu", "etl"})
	if !errors.Is(err, access.ErrForbidden) || err.Error() != `key:runner may take tasks of the queues build, gpu only, and queues[1] is "etl"; leave it out, or ask an ADMIN for a key that lists it` {
		t.Fatalf("another queue: %v", err)
	}
	if vs := violations(t, w.CanUseQueues([]string{"gpu", "Not A Queue"})); !strings.Contains(vs["queues[1]"], "is not a queue name") {
		t.Fatalf("a bad name: %v", vs)
	}
	all, _ := access.NewKeyPrincipal("any", access.Worker, nil, nil)
	if err := all.CanUseQueues([]string{"etl", "x.y"}); err != nil {
		t.Fatalf("an unlimited WORKER key: %v", err)
	}
	admin, _ := access.NewPrincipal("root", access.Admin, nil)
	if err := admin.CanUseQueues([]string{"gpu"}); !errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), "use a key with the role WORKER") {
		t.Fatalf("ADMIN: %v", err)
	}
	if w.WorkerActor() != "worker:runner" || admin.WorkerActor() != "" || access.Anonymous().WorkerActor() != "" || (access.Principal{}).WorkerActor() != "" {
		t.Fatalf("WorkerActor: %q %q", w.WorkerActor(), admin.WorkerActor())
	}
}
