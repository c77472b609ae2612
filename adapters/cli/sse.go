package cli

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// sseEvent is one Server-Sent Events record.
type sseEvent struct {
	ID, Event, Data string
}

// maxSSELine bounds one line of the stream; event envelopes are far smaller.
const maxSSELine = 4 << 20

// sseReader parses a text/event-stream body (the WHATWG rules: `field: value`
// lines, records end at a blank line, `:` lines are comments).
type sseReader struct {
	r      *bufio.Reader
	lastID string // the last id: field seen, kept across records
	cur    sseEvent
	data   []string
	has    bool
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// buffered reports whether more of the stream is already read, so a caller
// can wait for the end of a burst before acting on it.
func (s *sseReader) buffered() bool { return s.r.Buffered() > 0 }

// next returns the next record, or comment=true for a comment line (the
// server's keep-alive). It returns io.EOF when the stream ends.
func (s *sseReader) next() (ev sseEvent, comment bool, err error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, false, err
		}
		switch {
		case line == "":
			if !s.has {
				continue
			}
			ev := s.cur
			ev.ID = s.lastID
			ev.Data = strings.Join(s.data, "\n")
			s.cur, s.data, s.has = sseEvent{}, nil, false
			if ev.Event == "" {
				ev.Event = "message"
			}
			return ev, false, nil
		case line[0] == ':':
			return sseEvent{}, true, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.lastID = value
			}
		case "event":
			s.cur.Event, s.has = value, true
		case "data":
			s.data, s.has = append(s.data, value), true
		}
	}
}

var errLongLine = errors.New("event stream line too long")

// readLine reads one line without its CR, LF or CRLF ending.
func (s *sseReader) readLine() (string, error) {
	var b []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxSSELine {
			return "", errLongLine
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(b) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		line := strings.TrimSuffix(string(b), "\n")
		return strings.TrimSuffix(line, "\r"), nil
	}
}
