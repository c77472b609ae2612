package bootstrap

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// knownEnv is every variable yukta serve reads: the settings table, and the
// secrets and the PostgreSQL folder read from the environment only.
func knownEnv() map[string]bool {
	known := map[string]bool{"YUKTA_API_KEY": true, "YUKTA_MCP_API_KEY": true, JournalKeyEnv: true, "YUKTA_PG_BIN": true}
	v := reflect.ValueOf(settings)
	for i := range v.NumField() {
		known[v.Field(i).FieldByName("env").String()] = true
	}
	return known
}

// entrypointFileVars are the variables docker-entrypoint.sh reads from
// VAR_FILE.
func entrypointFileVars(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/docker-entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^for v in ([A-Z_ ]+); do\n\tfile_env "\$v"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("deploy/docker-entrypoint.sh: no `for v in ...; do file_env` loop")
	}
	return strings.Fields(string(m[1]))
}

// TestDeployArtifactsNameRealSettings catches drift between the deploy
// artifacts and the code: every YUKTA_* variable the Dockerfile, the
// entrypoint, compose.yaml and the systemd unit set is one yukta reads, the
// health check probes /readyz, and the volume is the data folder.
func TestDeployArtifactsNameRealSettings(t *testing.T) {
	known := knownEnv()
	if !known["YUKTA_DATA_DIR"] || !known["YUKTA_ADDR"] || len(known) < 30 {
		t.Fatalf("the settings table looks wrong: %v", known)
	}
	// The entrypoint: each VAR of VAR_FILE is a setting, or PGPASSWORD (read
	// by the PostgreSQL driver).
	fileVars := map[string]bool{}
	for _, v := range entrypointFileVars(t) {
		if !known[v] && v != "PGPASSWORD" {
			t.Errorf("docker-entrypoint.sh reads %s_FILE, but %s is not a setting", v, v)
		}
		fileVars[v+"_FILE"] = true
	}
	entry, _ := os.ReadFile("../deploy/docker-entrypoint.sh")
	for _, v := range regexp.MustCompile(`YUKTA_[A-Z0-9_]+`).FindAllString(string(entry), -1) {
		if !known[v] && !fileVars[v] {
			t.Errorf("docker-entrypoint.sh names %s, which yukta does not read", v)
		}
	}

	// The Dockerfile.
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(df), "\\\n", " ")
	env := map[string]string{}
	var volume, healthcheck, entrypoint, user string
	copies := map[string]string{} // destination: source
	for _, line := range strings.Split(text, "\n") {
		kw, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch kw {
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case "VOLUME":
			volume = strings.TrimSpace(rest)
		case "HEALTHCHECK":
			healthcheck = rest
		case "ENTRYPOINT":
			entrypoint = rest
		case "USER":
			user = strings.TrimSpace(rest)
		case "COPY":
			if f := strings.Fields(rest); len(f) == 2 {
				copies[f[1]] = f[0]
			}
		}
	}
	for k := range env {
		if !known[k] {
			t.Errorf("Dockerfile sets %s, which yukta does not read", k)
		}
	}
	if volume == "" || env["YUKTA_DATA_DIR"] != volume {
		t.Errorf("Dockerfile: VOLUME %q is not YUKTA_DATA_DIR %q", volume, env["YUKTA_DATA_DIR"])
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("Dockerfile: USER %q, want a non-root user", user)
	}
	if !strings.Contains(healthcheck, `CMD ["yukta-healthcheck"]`) || copies["/usr/local/bin/yukta-healthcheck"] != "deploy/healthcheck.sh" {
		t.Errorf("Dockerfile: HEALTHCHECK %q should run deploy/healthcheck.sh copied to /usr/local/bin/yukta-healthcheck (copies %v)", healthcheck, copies)
	}
	if !strings.Contains(entrypoint, `"docker-entrypoint.sh"`) || copies["/usr/local/bin/docker-entrypoint.sh"] != "deploy/docker-entrypoint.sh" {
		t.Errorf("Dockerfile: ENTRYPOINT %q should run deploy/docker-entrypoint.sh", entrypoint)
	}
	if !strings.Contains(text, "-X github.com/yukta/yukta/bootstrap.Version=${VERSION}") || !strings.Contains(text, "CGO_ENABLED=0 go build -trimpath") {
		t.Error("Dockerfile: the build no longer stamps bootstrap.Version or builds static with -trimpath")
	}
	hc, err := os.ReadFile("../deploy/healthcheck.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hc), "GET /readyz HTTP/1.0") {
		t.Error("deploy/healthcheck.sh does not probe /readyz")
	}

	// compose.yaml.
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck map[string]any    `yaml:"healthcheck"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Secrets []string `yaml:"secrets"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
		Secrets map[string]any `yaml:"secrets"`
		Volumes map[string]any `yaml:"volumes"`
	}
	cb, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(cb, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	pg, y := compose.Services["postgres"], compose.Services["yukta"]
	if !strings.HasPrefix(pg.Image, "postgres:") || pg.Healthcheck == nil {
		t.Errorf("compose.yaml: the postgres service %+v needs a postgres image and a health check", pg)
	}
	if y.DependsOn["postgres"].Condition != "service_healthy" {
		t.Error("compose.yaml: yukta should wait for a healthy postgres")
	}
	for k := range y.Environment {
		if !known[k] && !fileVars[k] && k != "PGPASSWORD" {
			t.Errorf("compose.yaml sets %s for yukta, which neither yukta nor its entrypoint reads", k)
		}
	}
	if u := y.Environment["YUKTA_DATABASE_URL"]; !strings.Contains(u, "@postgres:") || strings.Contains(u, ":@") || regexp.MustCompile(`//[^/@]*:[^/@]*@`).MatchString(u) {
		t.Errorf("compose.yaml: YUKTA_DATABASE_URL %q should reach the postgres service with no password in it", u)
	}
	if y.Environment["YUKTA_API_KEYS"] == "" && y.Environment["YUKTA_API_KEY_FILE"] == "" {
		t.Error("compose.yaml: yukta has no keys, so its entrypoint refuses to serve")
	}
	if !slices.Contains(y.Volumes, "yukta-data:"+volume) {
		t.Errorf("compose.yaml: yukta's volumes %v do not mount yukta-data on the image's volume %s", y.Volumes, volume)
	}
	for _, svc := range []string{"postgres", "yukta"} {
		for _, s := range compose.Services[svc].Secrets {
			if _, ok := compose.Secrets[s]; !ok {
				t.Errorf("compose.yaml: %s uses the secret %s, which is not declared", svc, s)
			}
		}
	}

	// The systemd unit.
	unit, err := os.ReadFile("../deploy/yukta.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^#?Environment=(YUKTA_[A-Z0-9_]+)=`).FindAllStringSubmatch(string(unit), -1) {
		if !known[m[1]] {
			t.Errorf("deploy/yukta.service sets %s, which yukta does not read", m[1])
		}
	}
	for _, want := range []string{"StateDirectory=yukta", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes",
		"CapabilityBoundingSet=\n", "RestrictAddressFamilies=", "SystemCallFilter=@system-service", "EnvironmentFile=", "DynamicUser=yes"} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("deploy/yukta.service lacks %q", strings.TrimSpace(want))
		}
	}
}
