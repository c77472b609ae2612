package execution

// ValidID reports whether s has the text form of an execution id (a UUID:
// 8-4-4-4-12 hexadecimal digits, either case), so that every door and store
// refuses a malformed id the same way before it reaches a query.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
