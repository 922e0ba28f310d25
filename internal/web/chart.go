package web

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file draws the decisions per hour as stacked SVG bars, one colour
// per outcome, one bar per hour of the last day that has any; the legend
// counts who decided. It is drawn here: no chart library.

const (
	chartW, chartH = 720, 220
	chartHours     = 24
)

var outcomeColours = map[string]string{"allowed": "#3a3", "rejected": "#c33", "cancelled": "#888"}

func chart(lines []logLine) string {
	if len(lines) == 0 {
		return `<p class="empty">No decisions to chart.</p>`
	}
	var last time.Time
	for _, l := range lines {
		if l.Time.After(last) {
			last = l.Time
		}
	}
	end := last.Truncate(time.Hour)
	start := end.Add(-(chartHours - 1) * time.Hour)
	type bar map[string]int
	bars := make([]bar, chartHours)
	deciders, projects := map[string]int{}, map[string]int{}
	for _, l := range lines {
		if l.Time.Before(start) {
			continue
		}
		i := int(l.Time.Truncate(time.Hour).Sub(start) / time.Hour)
		if i < 0 || i >= chartHours {
			continue
		}
		if bars[i] == nil {
			bars[i] = bar{}
		}
		bars[i][l.verdict()]++
		deciders[l.DecidedBy]++
		if l.Cwd != "" {
			projects[l.Cwd]++
		}
	}
	peak := 1
	for _, b := range bars {
		n := 0
		for _, c := range b {
			n += c
		}
		peak = max(peak, n)
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="decisions per hour by outcome">`, chartW, chartH, chartW, chartH)
	// Which projects the bars count (the project filter narrows them).
	fmt.Fprintf(&s, `<title>decisions per hour by outcome; projects: %s</title>`, esc(counts(projects)))
	left, bottom, top := 40, chartH-30, 10
	bw := (chartW - left - 10) / chartHours
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, left, bottom, chartW-10, bottom)
	fmt.Fprintf(&s, `<text x="4" y="%d" font-size="11">%d</text><text x="4" y="%d" font-size="11">0</text>`, top+10, peak, bottom)
	order := []string{"allowed", "rejected", "cancelled"}
	for i, b := range bars {
		x := left + i*bw + 2
		y := bottom
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range b {
				if !yield(k) {
					return
				}
			}
		})
		slices.SortStableFunc(keys, func(a, c string) int { return slices.Index(order, c) - slices.Index(order, a) })
		for _, k := range keys {
			h := b[k] * (bottom - top) / peak
			y -= h
			colour, ok := outcomeColours[k]
			if !ok {
				colour = "#44a"
			}
			fmt.Fprintf(&s, `<rect class="bar o-%s" x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %d</title></rect>`,
				classOf(k), x, y, bw-4, h, colour, esc(k), b[k])
		}
		if i%3 == 0 {
			fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="10">%s</text>`, x, bottom+14, start.Add(time.Duration(i)*time.Hour).Local().Format("15h"))
		}
	}
	lx := left
	for _, k := range order {
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`, lx, chartH-12, outcomeColours[k], lx+14, chartH-3, k)
		lx += 90
	}
	fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="11">decided by: %s</text>`, lx, chartH-3, esc(counts(deciders)))
	s.WriteString(`</svg>`)
	return s.String()
}

// counts lists "name n" of m, sorted by name.
func counts(m map[string]int) string {
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none recorded"
	}
	return strings.Join(out, ", ")
}
