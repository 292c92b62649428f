package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// The width help is wrapped to: a terminal's, within these bounds (a
// line longer than 100 columns reads badly however wide the window, and
// below 60 kong's flag column, up to 30 wide, leaves its help no room).
const (
	defaultHelpWidth = 80
	minHelpWidth     = 60
	maxHelpWidth     = 100
)

// helpWidth is the width to wrap help to: COLUMNS when set, else the
// terminal's when stdout is one, else 80, within the bounds above.
//
// kong guesses a width of its own (the process's COLUMNS, the terminal,
// else 80) and wraps to the smaller of it and ours (WrapUpperBound); in
// the process getenv is os.Getenv, so the two agree up to our bounds.
func helpWidth(getenv func(string) string, stdout io.Writer) int {
	width := defaultHelpWidth
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		width = n
	} else if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			width = n
		}
	}
	return min(max(width, minHelpWidth), maxHelpWidth)
}

// columns writes rows of a name and its help, indented by two, in two
// columns fitting width: the help wrapped beside its name, or under it
// when the name is wider than the first column (as kong lays out flags).
func columns(w io.Writer, width int, rows [][2]string) {
	const indent, gap = "  ", 2
	widest := width * 3 / 8
	left := 0
	for _, r := range rows {
		if n := utf8.RuneCountInString(r[0]); n > left && n <= widest {
			left = n
		}
	}
	pad := strings.Repeat(" ", len(indent)+left+gap)
	for _, r := range rows {
		help := wrap(r[1], width-len(pad))
		if n := utf8.RuneCountInString(r[0]); n <= left {
			line := indent + r[0]
			if len(help) > 0 {
				line += strings.Repeat(" ", left-n+gap) + help[0]
				help = help[1:]
			}
			fmt.Fprintln(w, line)
		} else {
			for i, line := range wrap(r[0], width-len(indent)-4) {
				if i > 0 {
					line = "    " + line // a name broken over lines
				}
				fmt.Fprintf(w, "%s%s\n", indent, line)
			}
		}
		for _, line := range help {
			fmt.Fprintf(w, "%s%s\n", pad, line)
		}
	}
}

// wrap breaks text into lines of at most width runes at spaces; a word
// longer than width has a line of its own.
func wrap(text string, width int) []string {
	var lines []string
	var line strings.Builder
	n := 0 // runes in line
	for _, word := range strings.Fields(text) {
		k := utf8.RuneCountInString(word)
		if n > 0 && n+1+k > width {
			lines = append(lines, line.String())
			line.Reset()
			n = 0
		}
		if n > 0 {
			line.WriteByte(' ')
			n++
		}
		line.WriteString(word)
		n += k
	}
	if n > 0 {
		lines = append(lines, line.String())
	}
	return lines
}
