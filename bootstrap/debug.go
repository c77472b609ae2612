package bootstrap

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
)

// debugModule serves Go profiles on a loopback address when --debug-addr is
// set, for diagnosing a live server; it is off by default.
var debugModule = fx.Module("debug", fx.Invoke(func(lc fx.Lifecycle, cfg Config, log *zap.Logger) {
	if cfg.DebugAddr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Loopback Hosts only: a page on another site must not reach the
	// profiles through DNS rebinding.
	gate := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "forbidden Host", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: gate, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.DebugAddr)
			if err != nil {
				return err
			}
			log.Info("profiling enabled", zap.String("addr", ln.Addr().String()))
			go func() {
				defer close(done)
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Warn("debug server", zap.Error(err))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { err := srv.Shutdown(ctx); <-done; return err },
	})
}))
