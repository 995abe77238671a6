package main

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v      float64
		digits int
		want   string
	}{
		{1234567.4, 0, "1,234,567"},
		{999, 0, "999"},
		{1000, 1, "1,000.0"},
		{-12345.678, 2, "-12,345.68"},
		{0.5, 2, "0.50"},
		{math.NaN(), 2, "–"},
	} {
		if got := format(c.v, c.digits); got != c.want {
			t.Errorf("format(%v, %d) = %q, want %q", c.v, c.digits, got, c.want)
		}
	}
}

func TestFormatRatio(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want string
	}{
		{0.4249, "0.42×"},
		{5.52, "5.52×"},
		{0.01, "0.01×"},
		{0.0031, "1/323"},
		{47.5 / 15183.6, "1/320"},
		{0.00001, "1/100,000"},
		{0, "0.00×"},
		{math.NaN(), "–"},
		{math.Inf(1), "–"},
	} {
		if got := formatRatio(c.r); got != c.want {
			t.Errorf("formatRatio(%v) = %q, want %q", c.r, got, c.want)
		}
	}
}

func TestSlugAndRotate(t *testing.T) {
	if got := slug("direct, 1 KiB × 1 partition"); got != "direct-1-KiB-1-partition" {
		t.Errorf("slug = %q", got)
	}
	if got := rotate([]string{"a", "b", "c"}, 2); got[0] != "b" || got[2] != "a" {
		t.Errorf("rotate(a b c, round 2) = %v", got)
	}
	if got := rotate([]string{"a", "b", "c"}, 4); got[0] != "a" {
		t.Errorf("rotate(a b c, round 4) = %v", got)
	}
}
