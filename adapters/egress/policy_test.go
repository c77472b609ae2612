package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestForbidden(t *testing.T) {
	tests := []struct {
		addr, want string // want: a word of the reason, "" for allowed
	}{
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.128.0.1", ""},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
		{"64:ff9b::808:808", ""},
		{"2002:7f00:1::", "6to4"},
		{"2002:808:808::", ""},
	}
	for _, tt := range tests {
		got := forbidden(netip.MustParseAddr(tt.addr))
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("forbidden(%s): got %q, want %q", tt.addr, got, tt.want)
		}
	}
}
