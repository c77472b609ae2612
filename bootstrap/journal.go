package bootstrap

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/journal"
)

// JournalKeyEnv names the environment variable that may hold the journal's
// ed25519 signing key (standard base64 of the 32-byte seed or the 64-byte
// private key). It is read from the environment only, never a flag, so the
// secret does not show in the process list. Without it the key lives in the
// data folder (journalKeyFile), made on first start.
const JournalKeyEnv = "YUKTA_JOURNAL_KEY"

// journalKeyFile is the key's file in the data folder: PKCS #8 PEM, mode 0600.
const journalKeyFile = "journal-ed25519.pem"

// JournalKey is the server's checkpoint signing key.
type JournalKey ed25519.PrivateKey

// journalModule wires the observer journal: the signing key, the observer
// worker (started and joined with the server) and the read use cases the
// REST door serves.
var journalModule = fx.Module("journal",
	fx.Provide(
		func(cfg Config, log *zap.Logger) (JournalKey, error) {
			return loadJournalKey(os.Getenv(JournalKeyEnv), cfg.DataDir, log)
		},
		newObserver,
		postgres.NewJournalReader,
		func(r *postgres.JournalReader) journalapp.JournalReader { return r },
		postgres.NewJournalKeys,
		func(r *postgres.JournalKeys) journalapp.KeyRegistry { return r },
		journalapp.NewExportJournal,
		journalapp.NewProjectJournal,
		func(r journalapp.JournalReader, k JournalKey, reg journalapp.KeyRegistry) *journalapp.VerifyJournal {
			return journalapp.NewVerifyJournal(r, ed25519.PrivateKey(k).Public().(ed25519.PublicKey), reg)
		},
		func(k JournalKey, reg journalapp.KeyRegistry) *journalapp.GetPublicKey {
			return journalapp.NewGetPublicKey(ed25519.PrivateKey(k).Public().(ed25519.PublicKey), reg)
		},
		func(e *journalapp.ExportJournal, v *journalapp.VerifyJournal, p *journalapp.ProjectJournal, k *journalapp.GetPublicKey) httpapi.JournalUseCases {
			return httpapi.JournalUseCases{Export: e, Verify: v, Project: p, PublicKey: k}
		},
	),
	fx.Invoke(func(m *metrics.Metrics, o *journalapp.Observer) {
		m.SetLagFunc(func() int64 { return max(o.Lag(), 0) })
	}),
)

// journalKeyHint is what a refused start tells the operator to do.
var journalKeyHint = journalapp.KeyHint{
	Same:   "the same " + JournalKeyEnv + " as the instances already running, or a copy of their <data-dir>/" + journalKeyFile,
	Rotate: "`yukta serve --rotate-journal-key` (or " + settings.journalRotate.env + "=true; see docs/journal.md#rotating-the-key)",
}

// newObserver builds the observer and runs it in one owned goroutine from
// start to stop; stopping cancels it and waits for it to return. Before it
// starts (and after the migrations), the instance's key is registered, or
// the start is refused (journalapp.RegisterKey).
func newObserver(lc fx.Lifecycle, pool *pgxpool.Pool, key JournalKey, reg journalapp.KeyRegistry, cfg Config, ext Extensions, log *zap.Logger) (*journalapp.Observer, error) {
	l := log.Named("journal")
	o, err := journalapp.NewObserver(postgres.NewJournalTransactor(pool), ed25519.PrivateKey(key), time.Now, journalapp.ObserverConfig{},
		func(err error) { l.Warn("observer round failed; retrying", zap.Error(err)) })
	if err != nil {
		return nil, err
	}
	if ext.Audit != nil {
		o.UseAuditSink(ext.Audit)
	}
	register := journalapp.NewRegisterKey(reg, journalKeyHint, time.Now)
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		r, err := register.Handle(ctx, o.PublicKey(), cfg.RotateJournalKey)
		if err != nil {
			return err // the server says it did not start, and why
		}
		switch {
		case r.Retired != "":
			l.Warn("journal signing key rotated: this key is current, the one before is retired", zap.String("key_id", r.KeyID), zap.String("retired_key_id", r.Retired))
		case r.Registered:
			l.Info("journal signing key registered as current", zap.String("key_id", r.KeyID))
		case cfg.RotateJournalKey:
			l.Info("--rotate-journal-key: this key is already current; nothing to rotate", zap.String("key_id", r.KeyID))
		}
		return nil
	}})
	runInBackground(lc, "journal observer", o.Run,
		func() {
			l.Info("observer started", zap.String("public_key", base64.StdEncoding.EncodeToString(o.PublicKey())),
				zap.String("key_id", journal.KeyID(o.PublicKey())))
		},
		func() {
			st := o.Stats()
			l.Info("observer stopped", zap.Int64("rounds", st.Rounds), zap.Int64("events", st.Events), zap.Int64("records", st.Records),
				zap.Int64("checkpoints", st.Checkpoints), zap.Int64("lag_events", o.Lag()))
		})
	return o, nil
}

// loadJournalKey returns the key from env (when set), else from the data
// folder, generating and saving it there on first start.
func loadJournalKey(env, dataDir string, log *zap.Logger) (JournalKey, error) {
	if env = strings.TrimSpace(env); env != "" {
		raw, err := base64.StdEncoding.DecodeString(env)
		switch {
		case err == nil && len(raw) == ed25519.SeedSize:
			return JournalKey(ed25519.NewKeyFromSeed(raw)), nil
		case err == nil && len(raw) == ed25519.PrivateKeySize:
			return JournalKey(ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])), nil
		}
		return nil, fmt.Errorf("%s must be the standard base64 of a 32-byte ed25519 seed (or 64-byte private key); "+
			"make one with: head -c 32 /dev/urandom | base64", JournalKeyEnv)
	}
	if dataDir == "" {
		return nil, fmt.Errorf("no journal signing key: set %s or a data folder (--data-dir) to keep one in", JournalKeyEnv)
	}
	path := filepath.Join(dataDir, journalKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := parseJournalKeyPEM(b)
		if err != nil {
			return nil, fmt.Errorf("journal signing key %s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("journal signing key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("journal signing key: %w", err)
	}
	// O_EXCL: two servers starting on one folder cannot both write a key;
	// the loser reads the winner's.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadJournalKey("", dataDir, log)
	}
	if err != nil {
		return nil, fmt.Errorf("journal signing key: %w", err)
	}
	werr := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("journal signing key: write %s: %w", path, err)
	}
	log.Info("journal signing key generated", zap.String("path", path),
		zap.String("public_key", base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))))
	return JournalKey(priv), nil
}

func parseJournalKeyPEM(b []byte) (JournalKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM \"PRIVATE KEY\" block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not an ed25519 key")
	}
	return JournalKey(priv), nil
}
