package journalapp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// TestRegisterKeyRefusesANonKey: what is not an ed25519 public key is
// refused before the registry is asked (there is none here to ask).
func TestRegisterKeyRefusesANonKey(t *testing.T) {
	uc := NewRegisterKey(nil, KeyHint{}, time.Now)
	for _, k := range [][]byte{nil, make([]byte, 31), make([]byte, 64)} {
		if _, err := uc.Handle(context.Background(), k, false); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%d-byte key: %v, want ErrInvalid", len(k), err)
		}
	}
}
