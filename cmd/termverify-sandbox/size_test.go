package main

import (
	"math"
	"strconv"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"0", 0},
		{"1048576", 1048576},
		{"512M", 512 << 20},
		{"512m", 512 << 20},
		{"1G", 1 << 30},
		{"1g", 1 << 30},
		{"4k", 4 << 10},
		{"0K", 0},
		{"1.5G", 1610612736},
		{"1.5g", 1610612736},
		{"0.5K", 512},
		{"1.0M", 1 << 20},
		{"0.1G", 107374182}, // 107374182.4, rounded down, exactly
		{"1.1K", 1126},      // 1126.4
		{"1.999999K", 2047}, // 2047.998976
		{"2.50000000000000000000000001M", 2621440},
		{"007", 7},
		{"9223372036854775807", math.MaxInt64},
		{"8589934591.999999999G", 9223372036854775806}, // just under 2^63 once floored
		{"8589934592G", -1},                            // 2^63: one past int64
		{"9223372036854775808", -1},
		{"99999999999999999999G", -1},
		{"8388608T", -1}, // no T suffix
		{"1.5", -1},      // a fraction of a byte without a suffix
		{"", -1},
		{"G", -1},
		{".5G", -1},
		{"1.G", -1},
		{"1..5G", -1},
		{"-1", -1},
		{"-1.5G", -1},
		{"+1G", -1},
		{"1e9", -1},
		{"1e3K", -1},
		{"NaN", -1},
		{"NaNG", -1},
		{"Inf", -1},
		{"InfG", -1},
		{"0x10", -1},
		{"1_000", -1},
		{" 1G", -1},
		{"1G ", -1},
		{"1 G", -1},
		{"1GB", -1},
		{"1KiB", -1},
		{"١G", -1}, // non-ASCII digit
	} {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.want < 0 {
				if err == nil {
					t.Fatalf("parseSize(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}
