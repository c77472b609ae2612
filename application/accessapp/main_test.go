package accessapp_test

import (
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
