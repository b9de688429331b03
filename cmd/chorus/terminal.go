package main

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// Everything the command line prints goes through terminalSafe (newRootCmd installs it on the
// root command's output and error streams, main on its last error): names, titles and text come
// from the database, where any agent may have written them, and must not drive the operator's
// terminal (clear it, retitle it, rewrite what it shows).

// terminalSafe wraps w so that control characters reach it as visible escapes: every C0 control
// but newline and tab (ESC, BEL, CR, backspace, ...), DEL, the C1 controls (CSI, OSC, ...) and
// the bidirectional formatting characters are written as \uXXXX, and bytes that are not UTF-8
// as U+FFFD. Inside JSON strings, where Go's encoder leaves C1 and bidi characters as they are,
// \uXXXX is the same character, so JSON output stays valid and means the same.
func terminalSafe(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		return s
	}
	return &safeWriter{w: w}
}

type safeWriter struct {
	w io.Writer
	// pending is the start of a UTF-8 sequence that the last Write cut, held for the next.
	pending []byte
}

func (s *safeWriter) Write(p []byte) (int, error) {
	buf := append(s.pending, p...)
	s.pending = nil
	// Hold back a sequence cut at the end (at most three bytes), so a character split between
	// two writes is judged whole.
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				s.pending = append([]byte(nil), buf[i:]...)
				buf = buf[:i]
			}
			break
		}
	}
	if _, err := s.w.Write(escapeControls(buf)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeControls returns b with the characters terminalSafe withholds escaped.
func escapeControls(b []byte) []byte {
	clean := true
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if unsafeRune(r, size) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case unsafeRune(r, size):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	}
	return unicode.Is(unicode.Bidi_Control, r)
}
