package localpg

import (
	"io"
	"sync"
)

// logTailSize bounds how much server output we keep for error messages: enough for
// the FATAL/HINT lines of a failed start, small enough to hold forever.
const logTailSize = 64 << 10

// logTail forwards server output to the user's writer and remembers the most recent
// bytes, so a failed start can say why even when the caller discards the log.
type logTail struct {
	mu    sync.Mutex
	out   io.Writer // nil: keep only the tail
	buf   []byte
	total int64 // bytes ever written; lets callers take a mark and read "since then"
}

// Write never fails: an error here would stop exec's copy goroutine, after which
// postgres would die of SIGPIPE on its next log line. A broken log sink must not take
// the database down with it.
func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.out != nil {
		_, _ = l.out.Write(p)
	}
	l.total += int64(len(p))
	if len(p) >= logTailSize {
		l.buf = append(l.buf[:0], p[len(p)-logTailSize:]...)
		return len(p), nil
	}
	if over := len(l.buf) + len(p) - logTailSize; over > 0 {
		n := copy(l.buf, l.buf[over:])
		l.buf = l.buf[:n]
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *logTail) mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// since returns what was written after mark, as far as the tail still holds it.
func (l *logTail) since(mark int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.total - mark
	if n > int64(len(l.buf)) {
		n = int64(len(l.buf))
	}
	return string(l.buf[int64(len(l.buf))-n:])
}
