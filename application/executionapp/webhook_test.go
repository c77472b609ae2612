package executionapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"
)

func sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestVerifyDelivery(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"order":42}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	old := func() string { // the body-only signature of the first scheme
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(body)
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}()
	late := strconv.FormatInt(now.Add(-WebhookTolerance-time.Second).Unix(), 10)
	early := strconv.FormatInt(now.Add(WebhookTolerance+time.Second).Unix(), 10)
	edge := strconv.FormatInt(now.Add(-WebhookTolerance).Unix(), 10)
	for _, c := range []struct {
		name    string
		in      WebhookInput
		secrets []string
		want    bool
	}{
		{"signed now", WebhookInput{Body: body, Timestamp: ts, Signature: sign("s3cret", ts, body)}, []string{"s3cret"}, true},
		{"second of two secrets", WebhookInput{Body: body, Timestamp: ts, Signature: sign("other", ts, body)}, []string{"s3cret", "other"}, true},
		{"at the edge of the window", WebhookInput{Body: body, Timestamp: edge, Signature: sign("s3cret", edge, body)}, []string{"s3cret"}, true},
		{"too old", WebhookInput{Body: body, Timestamp: late, Signature: sign("s3cret", late, body)}, []string{"s3cret"}, false},
		{"from the future", WebhookInput{Body: body, Timestamp: early, Signature: sign("s3cret", early, body)}, []string{"s3cret"}, false},
		{"no timestamp", WebhookInput{Body: body, Signature: sign("s3cret", "", body)}, []string{"s3cret"}, false},
		{"timestamp not signed", WebhookInput{Body: body, Timestamp: ts, Signature: old}, []string{"s3cret"}, false},
		{"another timestamp", WebhookInput{Body: body, Timestamp: ts, Signature: sign("s3cret", edge, body)}, []string{"s3cret"}, false},
		{"another body", WebhookInput{Body: []byte(`{"order":43}`), Timestamp: ts, Signature: sign("s3cret", ts, body)}, []string{"s3cret"}, false},
		{"wrong secret", WebhookInput{Body: body, Timestamp: ts, Signature: sign("guess", ts, body)}, []string{"s3cret"}, false},
		{"not hex", WebhookInput{Body: body, Timestamp: ts, Signature: "sha256=zz"}, []string{"s3cret"}, false},
		{"no prefix", WebhookInput{Body: body, Timestamp: ts, Signature: sign("s3cret", ts, body)[7:]}, []string{"s3cret"}, false},
		{"fractional timestamp", WebhookInput{Body: body, Timestamp: ts + ".5", Signature: sign("s3cret", ts+".5", body)}, []string{"s3cret"}, false},
	} {
		at, ok := verifyDelivery(c.in, c.secrets, now)
		if ok != c.want {
			t.Errorf("%s: verified %v, want %v", c.name, ok, c.want)
		}
		if ok && at.Unix() != mustInt(t, c.in.Timestamp) {
			t.Errorf("%s: time %v, want the signed timestamp", c.name, at)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
