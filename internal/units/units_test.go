package units_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/units"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string // substring; "" means success
	}{
		{in: "0", want: 0},
		{in: "4096", want: 4096},
		{in: "17B", want: 17},
		{in: "512KiB", want: 512 << 10},
		{in: "32MiB", want: 32 << 20},
		{in: "2GiB", want: 2 << 30},
		{in: "1TiB", want: 1 << 40},
		{in: "1kB", want: 1000},
		{in: "1KB", want: 1000},
		{in: "1MB", want: 1000000},
		{in: "3GB", want: 3000000000},
		{in: "1TB", want: 1000000000000},
		{in: "1.5MiB", want: 3 << 19},
		{in: "1.5 MiB", want: 3 << 19},
		{in: "0.5KiB", want: 512},
		{in: "1.250kB", want: 1250},
		{in: "1.0000000000000000000000GiB", want: 1 << 30},
		{in: "18446744073709551615", want: math.MaxUint64},
		{in: "16777215TiB", want: 16777215 << 40},

		{in: "", wantErr: "want a number"},
		{in: "MiB", wantErr: "want a number"},
		{in: "-1", wantErr: "want a number"},
		{in: "+1", wantErr: "want a number"},
		{in: ".5MiB", wantErr: "want a number"},
		{in: "1.MiB", wantErr: "want a number"},
		{in: "1.2.3", wantErr: "unknown unit"},
		{in: "32mib", wantErr: `unknown unit "mib"`},
		{in: "32Mb", wantErr: `unknown unit "Mb"`},
		{in: "32 ", wantErr: "unknown unit"},
		{in: "32  MiB", wantErr: "unknown unit"},
		{in: " 32MiB", wantErr: "want a number"},
		{in: "1e3", wantErr: "unknown unit"},
		{in: "0x10", wantErr: "unknown unit"},
		{in: "0.3B", wantErr: "not a whole number"},
		{in: "1.0000001KiB", wantErr: "not a whole number"},
		{in: "18446744073709551616", wantErr: "too large"},
		{in: "16777216TiB", wantErr: "too large"},
		{in: "1.00000000000000000001B", wantErr: "too many fraction digits"},
		{in: "99999999999999999999999TiB", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := units.ParseSize(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, units.ErrBadSize)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", tt.in), "the error names the input")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1001, "1001B"},
		{1000, "1kB"},
		{1024, "1KiB"},
		{1024000, "1000KiB"}, // KiB divides and is larger than kB
		{1000000, "1MB"},
		{32 << 20, "32MiB"},
		{3 << 19, "1536KiB"},
		{1 << 40, "1TiB"},
		{1 << 50, "1024TiB"},
		{math.MaxUint64, "18446744073709551615B"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := units.FormatSize(tt.in)
			assert.Equal(t, tt.want, got)
			back, err := units.ParseSize(got)
			require.NoError(t, err)
			assert.Equal(t, tt.in, back)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "100ms", want: 100 * time.Millisecond},
		{in: "1m30s", want: 90 * time.Second},
		{in: "0s", want: 0},
		{in: "0", want: 0}, // time.ParseDuration's one unitless value
		{in: "250us", want: 250 * time.Microsecond},
		{in: "100", wantErr: `needs a unit, e.g. 100ms`},
		{in: "1.5", wantErr: `needs a unit`},
		{in: "-5ms", wantErr: "negative"},
		{in: "", wantErr: "want e.g."},
		{in: "fast", wantErr: "want e.g."},
		{in: "5 ms", wantErr: "want e.g."},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := units.ParseDuration(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, units.ErrBadDuration)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFlagValues(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(new(nopWriter))
	size := units.Size(32 << 20)
	timeout := units.Duration(100 * time.Millisecond)
	fs.Var(&size, "memory", "")
	fs.Var(&timeout, "timeout", "")

	require.NoError(t, fs.Parse([]string{"-memory", "64MiB", "-timeout", "50ms"}))
	assert.Equal(t, units.Size(64<<20), size)
	assert.Equal(t, units.Duration(50*time.Millisecond), timeout)

	err := fs.Parse([]string{"-memory", "lots"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lots")
	assert.Equal(t, units.Size(64<<20), size, "a bad value leaves the flag as it was")

	err = fs.Parse([]string{"-timeout", "-1s"})
	require.Error(t, err)
	assert.Equal(t, units.Duration(50*time.Millisecond), timeout)
}

func TestTextRoundTrip(t *testing.T) {
	var s units.Size
	require.NoError(t, s.UnmarshalText([]byte("512KiB")))
	b, err := s.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "512KiB", string(b))
	assert.True(t, errors.Is(s.UnmarshalText([]byte("512kib")), units.ErrBadSize))

	var d units.Duration
	require.NoError(t, d.UnmarshalText([]byte("1m30s")))
	b, err = d.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "1m30s", string(b))
	assert.ErrorIs(t, d.UnmarshalText([]byte("30")), units.ErrBadDuration)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// FuzzParseSize checks that ParseSize never panics, and that whatever it
// accepts formats back to the same number of bytes.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "32MiB", "1.5 GiB", "1MB", "4096", "0.3B", "1.", "18446744073709551616", "16777216TiB", "1.0000000000000000000001kB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := units.ParseSize(s)
		if err != nil {
			if !errors.Is(err, units.ErrBadSize) {
				t.Fatalf("ParseSize(%q): error %v does not wrap ErrBadSize", s, err)
			}
			return
		}
		out := units.FormatSize(n)
		back, err := units.ParseSize(out)
		if err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, FormatSize = %q, parsed back = %d, %v", s, n, out, back, err)
		}
	})
}

func ExampleParseSize() {
	n, err := units.ParseSize("32MiB")
	fmt.Println(n, err)
	fmt.Println(units.FormatSize(n))
	_, err = units.ParseSize("32mb")
	fmt.Println(err)
	// Output:
	// 33554432 <nil>
	// 32MiB
	// units: bad size "32mb": unknown unit "mb" (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)
}
