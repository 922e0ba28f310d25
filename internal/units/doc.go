// Package units parses and formats the sizes and durations written in
// permhost's flags and configuration: "32MiB", "512KiB", "1MB", "4096",
// "100ms".
//
// Sizes take SI units (kB, MB, GB, TB: powers of 1000) and binary units
// (KiB, MiB, GiB, TiB: powers of 1024), spelled exactly so; a plain number is
// bytes. A size must be a whole number of bytes and fit in a uint64.
package units
