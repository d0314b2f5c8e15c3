package vethtest

import "testing"

func TestIsTrueAcceptsWhatCISystemsSet(t *testing.T) {
	for _, v := range []string{"true", "TRUE", "True", "1", "t", "yes", "YES", "on", " true "} {
		if !isTrue(v) {
			t.Errorf("CI=%q not taken as true", v)
		}
	}
	for _, v := range []string{"", "false", "0", "no", "off", "maybe"} {
		if isTrue(v) {
			t.Errorf("CI=%q taken as true", v)
		}
	}
}
