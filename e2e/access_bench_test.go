package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkAccessOverhead reads one execution's status over REST, 2,000
// times one after another, from a server in open mode and from one whose
// key file holds 100 keys (the presented key is the last one, so every
// stored hash is compared). The difference is what authentication,
// authorization and the rate limits cost a request.
func BenchmarkAccessOverhead(b *testing.B) {
	env := durableCluster(b)
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "key%d VIEWER bench-secret-%03d-0123456789abcdefgh\n", i, i)
	}
	keyFile := filepath.Join(b.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte(lines.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	const key = "bench-secret-099-0123456789abcdefgh"
	for range b.N {
		open := benchServer(b, env)
		applyDoc(b, open, "acc", linearSession("acc", 2))
		id := startRun(b, open, "acc", map[string]any{})
		path := "/api/sessions/acc/executions/" + id
		openLat := readLatencies(b, open.URL+path, "")
		open.Stop()
		keyed := benchServerWith(b, env, "YUKTA_API_KEYS="+keyFile)
		keyedLat := readLatencies(b, keyed.URL+path, key)
		keyed.Stop()
		b.ReportMetric(float64(percentile(openLat, 0.5).Microseconds())/1000, "open_p50_ms")
		b.ReportMetric(float64(percentile(openLat, 0.99).Microseconds())/1000, "open_p99_ms")
		b.ReportMetric(float64(percentile(keyedLat, 0.5).Microseconds())/1000, "keyed_p50_ms")
		b.ReportMetric(float64(percentile(keyedLat, 0.99).Microseconds())/1000, "keyed_p99_ms")
		b.ReportMetric(float64(percentile(keyedLat, 0.5))/float64(percentile(openLat, 0.5)), "keyed/open_p50")
	}
}

func readLatencies(b *testing.B, url, key string) []time.Duration {
	b.Helper()
	client := &http.Client{}
	lat := make([]time.Duration, 0, 2000)
	for i := range 2100 {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		began := time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, res.StatusCode)
		}
		if i >= 100 { // warm-up
			lat = append(lat, time.Since(began))
		}
	}
	return lat
}
