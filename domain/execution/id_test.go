package execution

import "testing"

func TestValidID(t *testing.T) {
	for _, s := range []string{"01A231ED-6402-76D6-8A7F-CFE7D4A66AE9", "00000000-0000-0000-0000-000000000000", "0193b7a0-0000-7000-8000-000000000000"} {
		if !ValidID(s) {
			t.Errorf("ValidID(%q) = false", s)
		}
	}
	for _, s := range []string{"", "x", "01a231ed6402-76d6-8a7f-cfe7d4a66ae9-", "01a231ed-6402-76d6-8a7f-cfe7d4a66ae", "01a231ed-6402-76d6-8a7f-cfe7d4a66ae9x",
		"01a231ed-6402-76d6-8a7f-cfe7d4a66aeg", "01a231ed_6402-76d6-8a7f-cfe7d4a66ae9", "../../../../etc/passwd-0000000000000", "01a231ed-6402-76d6-8a7f-cfe7d4a66aé"} {
		if ValidID(s) {
			t.Errorf("ValidID(%q) = true", s)
		}
	}
}
