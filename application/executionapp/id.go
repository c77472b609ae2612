package executionapp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// newID returns a UUIDv7: random, but ordered by creation time, which keeps
// index inserts local and lists naturally ordered.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	b[6] = b[6]&0x0f | 0x70 // version 7
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewID returns a new UUIDv7, for ids other use cases mint (reviews,
// delegations); execution.ValidID accepts each.
func NewID() string { return newID() }
