package bootstrap

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// Config is everything `yukta serve` can be told, from flags and YUKTA_*
// environment variables (a flag wins over its variable). docs/configuration.md
// lists each one; keep the two in step.
type Config struct {
	Addr            string
	DataDir         string
	DatabaseURL     string
	AllowedHosts    []string
	AllowedOrigins  []string // normalised, e.g. "http://localhost:3000"
	LogLevel        string
	LogFormat       string
	ShutdownTimeout time.Duration
	DBMaxConns      int
	EgressAllowed   []string
	Workers         int
	Lease           time.Duration
	DebugAddr       string
	// Keys hold only hashes; the secrets are dropped once read.
	Keys authn.Keys
	// APIKeyFromEnv is whether YUKTA_API_KEY is set (its key is "admin").
	APIKeyFromEnv       bool
	KeyRate, SourceRate httpapi.Rate
	// AgentRate limits each supervisor credential on the agent API,
	// AuthFailures every source's wrong keys and credentials, and
	// AgentMaxBody the agent API's request bodies.
	AgentRate, AuthFailures httpapi.Rate
	AgentMaxBody            int
	// SupervisorEnvAllowed are the environment variables an http
	// supervisor's headers may name as ${env.NAME}.
	SupervisorEnvAllowed []string
	TrustedProxies       []*net.IPNet
	// Limits bound what one node attempt may produce.
	Limits executionapp.ValueLimits
	// Slots are the scheduler's server-wide limits: --max-running and
	// --reserved-supervisor-slots.
	Slots execution.Slots
	// Reviews is how long a supervisor has to answer a review, and the
	// decision a review takes when nobody decides.
	Reviews supervisorapp.ReviewConfig
	// SupervisorPolicy is what a supervisor may name, checked when it is
	// saved and when its engine runs: the executables of process
	// supervisors (--process-allowed-commands, --process-allow-any) and
	// the variables http headers read (SupervisorEnvAllowed).
	SupervisorPolicy supervisorapp.SavePolicy
	// Retention is when finished runs are deleted (config_retention.go).
	Retention RetentionConfig
	// Loops are the supervisor loop bounds: the deepest run a supervisor
	// may cause and each supervisor's directives per minute.
	Loops supervisor.LoopBounds
	// keyFile is the key file to watch (keyfile.go); nil without one.
	keyFile *keyFile
	// RotateJournalKey makes this instance's journal signing key the
	// database's current one, retiring the key before (journal.go).
	RotateJournalKey bool
}

// setting ties one flag to its environment variable.
type setting struct {
	flag, env, usage string
}

var settings = struct {
	addr, dataDir, databaseURL, allowedHosts, allowedOrigins, logLevel, logFormat, shutdownTimeout, dbMaxConns, egressAllowed, workers, lease, debugAddr,
	apiKeys, keyRate, sourceRate, trustedProxies, maxMessage, maxOutput, maxLogLine, maxRunning, reservedSlots, reviewTimeout, reviewDefault, agentRate, authFailures, agentMaxBody, supervisorEnv,
	processCommands, processAllowAny, loopDepth, loopBudget, journalRotate setting
}{
	addr:            setting{"addr", "YUKTA_ADDR", "host:port to listen on; loopback only unless API keys are set"},
	apiKeys:         setting{"api-keys", "YUKTA_API_KEYS", "path of a key file: named keys with roles and optional session lists (docs/configuration.md)"},
	keyRate:         setting{"rate-limit-key", "YUKTA_RATE_LIMIT_KEY", "requests each key may send: N/s, N/m or N/h (bursts of N), or off"},
	sourceRate:      setting{"rate-limit-source", "YUKTA_RATE_LIMIT_SOURCE", "requests each source address may send: N/s, N/m or N/h, or off"},
	trustedProxies:  setting{"trusted-proxies", "YUKTA_TRUSTED_PROXIES", "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client"},
	dataDir:         setting{"data-dir", "YUKTA_DATA_DIR", "folder for the embedded PostgreSQL cluster and server keys; default $STATE_DIRECTORY, /var/lib/yukta as root, else $XDG_DATA_HOME/yukta or ~/.local/share/yukta"},
	databaseURL:     setting{"database-url", "YUKTA_DATABASE_URL", "PostgreSQL URL; empty starts the embedded cluster in the data folder"},
	allowedHosts:    setting{"allowed-hosts", "YUKTA_ALLOWED_HOSTS", "comma-separated extra Host names the server answers to (loopback names are always allowed)"},
	allowedOrigins:  setting{"allowed-origins", "YUKTA_ALLOWED_ORIGINS", "comma-separated browser origins (scheme://host[:port]) whose pages may call the server besides its own"},
	logLevel:        setting{"log-level", "YUKTA_LOG_LEVEL", "debug, info, warn or error"},
	logFormat:       setting{"log-format", "YUKTA_LOG_FORMAT", "json, console, or auto (console on a terminal, json otherwise)"},
	shutdownTimeout: setting{"shutdown-timeout", "YUKTA_SHUTDOWN_TIMEOUT", "how long in-flight requests may take to finish on shutdown"},
	dbMaxConns:      setting{"db-max-conns", "YUKTA_DB_MAX_CONNS", "maximum connections in the database pool"},
	egressAllowed:   setting{"egress-allowed-hosts", "YUKTA_EGRESS_ALLOWED_HOSTS", "comma-separated hosts (host or host:port) HTTP nodes may reach even on private or loopback addresses"},
	workers:         setting{"workers", "YUKTA_WORKERS", "how many node messages this instance runs at once"},
	debugAddr:       setting{"debug-addr", "YUKTA_DEBUG_ADDR", "loopback host:port for Go profiling (/debug/pprof); empty disables it"},
	lease:           setting{"lease", "YUKTA_LEASE", "how long a claimed message is held without a heartbeat; a dead instance's work moves after this"},
	maxMessage:      setting{"max-message-bytes", executionapp.SettingMaxMessage, "largest message, result or expression value one node may produce, as JSON (bytes, or with KiB/MiB)"},
	maxOutput:       setting{"max-output-bytes", executionapp.SettingMaxOutput, "largest total of the messages one node attempt may emit (bytes, or with KiB/MiB)"},
	maxLogLine:      setting{"max-log-line-bytes", "YUKTA_MAX_LOG_LINE_BYTES", "longest log line stored; longer lines are cut with a note (bytes, or with KiB/MiB)"},
	maxRunning:      setting{"max-running", "YUKTA_MAX_RUNNING", "most executions RUNNING at once on the whole server (all instances); more starts wait PENDING in order; 0 is no limit"},
	reservedSlots:   setting{"reserved-supervisor-slots", "YUKTA_RESERVED_SUPERVISOR_SLOTS", "slots kept for workflow supervisors' runs beside --max-running"},
	agentRate:       setting{"agent-rate-limit", "YUKTA_AGENT_RATE_LIMIT", "requests each supervisor credential may send to the agent API: N/s, N/m or N/h, or off"},
	authFailures:    setting{"auth-failure-limit", "YUKTA_AUTH_FAILURE_LIMIT", "wrong keys or credentials each source may present before 429: N/s, N/m or N/h"},
	supervisorEnv:   setting{"supervisor-env-allowed", "YUKTA_SUPERVISOR_ENV_ALLOWED", "comma-separated environment variables an http supervisor's headers may name as ${env.NAME}; empty allows none"},
	agentMaxBody:    setting{"agent-max-body-bytes", "YUKTA_AGENT_MAX_BODY_BYTES", "largest agent API request body (bytes, or with KiB/MiB)"},
	reviewTimeout:   setting{"review-timeout", "YUKTA_REVIEW_TIMEOUT", "how long a supervisor asked to review a command has to answer before the default decision applies"},
	processCommands: setting{"process-allowed-commands", "YUKTA_PROCESS_ALLOWED_COMMANDS", "comma-separated absolute paths of the executables process supervisors may run; empty runs none"},
	processAllowAny: setting{"process-allow-any", "YUKTA_PROCESS_ALLOW_ANY", "true lets process supervisors run any executable; only with --process-allowed-commands empty"},
	loopDepth:       setting{"supervisor-max-depth", "YUKTA_SUPERVISOR_MAX_DEPTH", "the deepest run a supervisor may cause: a run its directive starts is one deeper than the run whose event it reacted to"},
	loopBudget:      setting{"supervisor-commands-per-minute", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE", "directives each supervisor may send per one-minute window; more are refused until the window ends"},
	journalRotate:   setting{"rotate-journal-key", "YUKTA_ROTATE_JOURNAL_KEY", "make this instance's journal signing key the current one and retire the key before (docs/journal.md#rotating-the-key); without it an instance whose key is not the current one refuses to start"},
	reviewDefault:   setting{"review-default", "YUKTA_REVIEW_DEFAULT", "the decision a review takes on a timeout, or when no supervisor up the chain has an opinion: ALLOW, DENY or REQUIRE_APPROVAL"},
}

// ParseServeConfig reads the serve flags, with defaults from getenv.
func ParseServeConfig(args []string, getenv func(string) string, fs *flag.FlagSet) (Config, error) {
	env := func(s setting, def string) string {
		if v := getenv(s.env); v != "" {
			return v
		}
		return def
	}
	str := func(p *string, s setting, def string) {
		fs.StringVar(p, s.flag, env(s, def), s.usage+" ("+s.env+")")
	}
	var c Config
	var hosts, origins, timeout, maxConns, egressHosts, workers, lease, keyFile, keyRate, sourceRate, proxies string
	var maxMessage, maxOutput, maxLogLine, maxRunning, reservedSlots, reviewTimeout, reviewDefault string
	var agentRate, authFailures, agentMaxBody, supervisorEnv string
	var processCommands, processAllowAny string
	var loopDepth, loopBudget string
	parseRetention := retentionFlags(fs, env)
	str(&c.Addr, settings.addr, "127.0.0.1:8080")
	str(&c.DataDir, settings.dataDir, defaultDataDirOf(getenv))
	str(&c.DatabaseURL, settings.databaseURL, "")
	str(&hosts, settings.allowedHosts, "")
	str(&origins, settings.allowedOrigins, "")
	str(&c.LogLevel, settings.logLevel, "info")
	str(&c.LogFormat, settings.logFormat, "auto")
	str(&timeout, settings.shutdownTimeout, "15s")
	str(&maxConns, settings.dbMaxConns, "20")
	str(&egressHosts, settings.egressAllowed, "")
	str(&workers, settings.workers, "128")
	str(&lease, settings.lease, "15s")
	str(&c.DebugAddr, settings.debugAddr, "")
	str(&keyFile, settings.apiKeys, "")
	str(&keyRate, settings.keyRate, "1000/s")
	str(&sourceRate, settings.sourceRate, "1000/s")
	str(&proxies, settings.trustedProxies, "")
	str(&maxMessage, settings.maxMessage, "1MiB")
	str(&maxOutput, settings.maxOutput, "8MiB")
	str(&maxLogLine, settings.maxLogLine, "16KiB")
	str(&maxRunning, settings.maxRunning, "0")
	str(&reservedSlots, settings.reservedSlots, "4")
	str(&reviewTimeout, settings.reviewTimeout, "30s")
	str(&agentRate, settings.agentRate, "600/m")
	str(&authFailures, settings.authFailures, "20/m")
	str(&agentMaxBody, settings.agentMaxBody, "64KiB")
	str(&supervisorEnv, settings.supervisorEnv, "")
	str(&reviewDefault, settings.reviewDefault, string(supervisor.RequireApproval))
	str(&processCommands, settings.processCommands, "")
	str(&processAllowAny, settings.processAllowAny, "false")
	str(&loopDepth, settings.loopDepth, strconv.Itoa(supervisor.DefaultLoopDepth))
	str(&loopBudget, settings.loopBudget, strconv.Itoa(supervisor.DefaultCommandsPerMinute))
	// A bool flag, so `--rotate-journal-key` alone turns it on.
	rotateEnv := env(settings.journalRotate, "false")
	rotateDefault, rotateErr := strconv.ParseBool(rotateEnv)
	fs.BoolVar(&c.RotateJournalKey, settings.journalRotate.flag, rotateDefault, settings.journalRotate.usage+" ("+settings.journalRotate.env+")")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("serve takes no arguments, got %q; run `yukta serve -h` for its flags", fs.Args())
	}
	var errs []error
	// Secrets come from the environment only: flags show in `ps`.
	keys, watched, err := loadKeys(getenv("YUKTA_API_KEY"), keyFile, getenv("YUKTA_MCP_API_KEY"))
	if err != nil {
		errs = append(errs, err)
	}
	c.Keys, c.keyFile = keys, watched
	c.APIKeyFromEnv = strings.TrimSpace(getenv("YUKTA_API_KEY")) != ""
	if host, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--addr (%s) %q must be host:port, e.g. 127.0.0.1:8080", settings.addr.env, c.Addr))
	} else if err := bindGuard(host, keys); err != nil {
		errs = append(errs, err)
	}
	if c.KeyRate, err = parseRate(keyRate); err != nil {
		errs = append(errs, fmt.Errorf("--rate-limit-key (%s): %w", settings.keyRate.env, err))
	}
	c.SupervisorEnvAllowed = splitList(supervisorEnv)
	if c.AgentRate, err = parseRate(agentRate); err != nil {
		errs = append(errs, fmt.Errorf("--agent-rate-limit (%s): %w", settings.agentRate.env, err))
	}
	if c.AuthFailures, err = parseRate(authFailures); err != nil || c.AuthFailures.Unlimited() {
		errs = append(errs, fmt.Errorf("--auth-failure-limit (%s) %q must be N/s, N/m or N/h: guessing keys is never unlimited", settings.authFailures.env, authFailures))
	}
	if n, err := parseBytes(agentMaxBody); err != nil || n < 1<<10 || n > 1<<20 {
		errs = append(errs, fmt.Errorf("--agent-max-body-bytes (%s) %q must be a size from 1KiB to 1MiB", settings.agentMaxBody.env, agentMaxBody))
	} else {
		c.AgentMaxBody = n
	}
	if c.SourceRate, err = parseRate(sourceRate); err != nil {
		errs = append(errs, fmt.Errorf("--rate-limit-source (%s): %w", settings.sourceRate.env, err))
	}
	if c.TrustedProxies, err = parseCIDRs(splitList(proxies)); err != nil {
		errs = append(errs, fmt.Errorf("--trusted-proxies (%s): %w", settings.trustedProxies.env, err))
	}
	c.AllowedHosts = splitList(hosts)
	for _, o := range splitList(origins) {
		origin, err := httpapi.ParseOrigin(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("--allowed-origins (%s): %w", settings.allowedOrigins.env, err))
			continue
		}
		c.AllowedOrigins = append(c.AllowedOrigins, origin.String())
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level (%s) %q must be debug, info, warn or error", settings.logLevel.env, c.LogLevel))
	}
	switch c.LogFormat {
	case "json", "console", "auto":
	default:
		errs = append(errs, fmt.Errorf("--log-format (%s) %q must be json, console or auto", settings.logFormat.env, c.LogFormat))
	}
	d, err := time.ParseDuration(timeout)
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout (%s) %q must be a positive duration such as 15s", settings.shutdownTimeout.env, timeout))
	}
	c.ShutdownTimeout = d
	n, err := strconv.Atoi(maxConns)
	if err != nil || n < 2 || n > 1000 {
		errs = append(errs, fmt.Errorf("--db-max-conns (%s) %q must be an integer from 2 to 1000", settings.dbMaxConns.env, maxConns))
	}
	c.DBMaxConns = n
	c.EgressAllowed = splitList(egressHosts)
	if c.Workers, err = strconv.Atoi(workers); err != nil || c.Workers < 1 || c.Workers > 10000 {
		errs = append(errs, fmt.Errorf("--workers (%s) %q must be an integer from 1 to 10000", settings.workers.env, workers))
	}
	if c.Lease, err = time.ParseDuration(lease); err != nil || c.Lease < time.Second || c.Lease > time.Hour {
		errs = append(errs, fmt.Errorf("--lease (%s) %q must be a duration from 1s to 1h", settings.lease.env, lease))
	}
	for _, l := range []struct {
		s        setting
		text     string
		to       *int
		min, max int
	}{
		{settings.maxMessage, maxMessage, &c.Limits.MaxMessageBytes, 1 << 10, 64 << 20},
		{settings.maxOutput, maxOutput, &c.Limits.MaxOutputBytes, 1 << 10, 256 << 20},
		{settings.maxLogLine, maxLogLine, &c.Limits.MaxLogLineBytes, 256, 1 << 20},
	} {
		n, err := parseBytes(l.text)
		if err != nil || n < l.min || n > l.max {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be a size from %s to %s, such as 1MiB or 65536",
				l.s.flag, l.s.env, l.text, jsonvalue.FormatBytes(l.min), jsonvalue.FormatBytes(l.max)))
		}
		*l.to = n
	}
	if c.Limits.MaxOutputBytes < c.Limits.MaxMessageBytes {
		errs = append(errs, fmt.Errorf("--max-output-bytes (%s) must be at least --max-message-bytes (%s): one message is an output too",
			settings.maxOutput.env, settings.maxMessage.env))
	}
	if c.Slots.MaxRunning, err = strconv.Atoi(maxRunning); err != nil || c.Slots.MaxRunning < 0 || c.Slots.MaxRunning > execution.MaxRunningLimit {
		errs = append(errs, fmt.Errorf("--max-running (%s) %q must be an integer from 0 (no limit) to %d", settings.maxRunning.env, maxRunning, execution.MaxRunningLimit))
	}
	if c.Slots.Reserved, err = strconv.Atoi(reservedSlots); err != nil || c.Slots.Reserved < 0 || c.Slots.Reserved > maxReservedSlots {
		errs = append(errs, fmt.Errorf("--reserved-supervisor-slots (%s) %q must be an integer from 0 to %d", settings.reservedSlots.env, reservedSlots, maxReservedSlots))
	}
	if c.Reviews.Timeout, err = time.ParseDuration(reviewTimeout); err != nil || c.Reviews.Timeout < time.Second || c.Reviews.Timeout > time.Hour {
		errs = append(errs, fmt.Errorf("--review-timeout (%s) %q must be a duration from 1s to 1h, such as 30s", settings.reviewTimeout.env, reviewTimeout))
	}
	if c.Reviews.Default, err = supervisor.ParseDefaultDecision(reviewDefault); err != nil {
		errs = append(errs, fmt.Errorf("--review-default (%s) %q must be ALLOW, DENY or REQUIRE_APPROVAL", settings.reviewDefault.env, reviewDefault))
	}
	if c.Loops.MaxDepth, err = strconv.Atoi(loopDepth); err != nil || c.Loops.MaxDepth < supervisor.MinLoopDepth || c.Loops.MaxDepth > supervisor.MaxLoopDepth {
		errs = append(errs, fmt.Errorf("--supervisor-max-depth (%s) %q must be an integer from %d to %d", settings.loopDepth.env, loopDepth,
			supervisor.MinLoopDepth, supervisor.MaxLoopDepth))
	}
	if c.Loops.CommandsPerMinute, err = strconv.Atoi(loopBudget); err != nil || c.Loops.CommandsPerMinute < supervisor.MinCommandsPerMinute ||
		c.Loops.CommandsPerMinute > supervisor.MaxCommandsPerMinute {
		errs = append(errs, fmt.Errorf("--supervisor-commands-per-minute (%s) %q must be an integer from %d to %d", settings.loopBudget.env, loopBudget,
			supervisor.MinCommandsPerMinute, supervisor.MaxCommandsPerMinute))
	}
	if rotateErr != nil {
		errs = append(errs, fmt.Errorf("%s %q must be true or false", settings.journalRotate.env, rotateEnv))
	}
	allowAny, err := strconv.ParseBool(processAllowAny)
	if err != nil {
		errs = append(errs, fmt.Errorf("--process-allow-any (%s) %q must be true or false", settings.processAllowAny.env, processAllowAny))
	}
	// Paths are split at commas only: a path may hold a space.
	var commands []string
	for _, p := range strings.Split(processCommands, ",") {
		if p = strings.TrimSpace(p); p != "" {
			commands = append(commands, p)
		}
	}
	if c.SupervisorPolicy, err = supervisorapp.NewSavePolicy(commands, allowAny && err == nil, c.SupervisorEnvAllowed); err != nil {
		errs = append(errs, err)
	}
	if c.DebugAddr != "" {
		host, _, err := net.SplitHostPort(c.DebugAddr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			errs = append(errs, fmt.Errorf("--debug-addr (%s) %q must be a loopback host:port such as 127.0.0.1:6060; profiles expose internals", settings.debugAddr.env, c.DebugAddr))
		}
	}
	var err2 error
	if c.Retention, err2 = parseRetention(); err2 != nil {
		errs = append(errs, err2)
	}
	if c.DatabaseURL == "" && c.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir (%s) is not set and has no default here (no STATE_DIRECTORY, XDG_DATA_HOME or home directory); "+
			"set it to a folder such as /var/lib/yukta, or set a database URL", settings.dataDir.env))
	}
	return c, errors.Join(errs...)
}

// maxReservedSlots bounds --reserved-supervisor-slots.
const maxReservedSlots = 10_000

// parseBytes reads a size: a whole number of bytes, optionally followed by
// B, KiB or MiB.
func parseBytes(s string) (int, error) {
	unit := 1
	num := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		n      int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(num, u.suffix) {
			num, unit = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > (1<<40)/unit {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * unit, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func splitList(s string) []string {
	var out []string // nil when s lists nothing
	return append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })...)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
