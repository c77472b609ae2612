package bootstrap

import (
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the one logger the server uses: JSON for machines
// (production, CI, log shippers), console for a person at a terminal.
func newLogger(c Config, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(c.LogLevel)
	if err != nil {
		return nil, err
	}
	format := c.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	if format == "console" {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		ec.TimeKey = "time"
		enc = zapcore.NewJSONEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}
