package stdlib

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// writeStringByByte is writeString as it was first written, one byte at a
// time: the reference the faster one must agree with.
func writeStringByByte(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

func FuzzWriteStringAgrees(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\n\t\r\b\f\x00\x1f", "héllo wörld", "\xff\xfe", "x\xc3", "日本語\n", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want strings.Builder
		got := appendString([]byte("prefix"), s)
		writeStringByByte(&want, s)
		if string(got) != "prefix"+want.String() {
			t.Fatalf("appendString(%q) = %q, want %q", s, got, want.String())
		}
	})
}

// TestAppendStringAgrees holds appendString to the byte-by-byte writer on
// every string of one and two bytes, every byte between plain runs, and
// random strings of escapes, plain runs and UTF-8, valid or not.
func TestAppendStringAgrees(t *testing.T) {
	check := func(s string) {
		var want strings.Builder
		writeStringByByte(&want, s)
		if got := appendString(nil, s); string(got) != want.String() {
			t.Fatalf("appendString(%q) = %q, want %q", s, got, want.String())
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("ab" + string([]byte{byte(c)}) + "cd")
		for d := range 256 {
			check(string([]byte{byte(c), byte(d)}))
		}
	}
	pieces := []string{"plain", " ", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "日本", "😀", "\xff", "\xc3", "\xe6\x97", "\u2028", "<&>"}
	r := rand.New(rand.NewPCG(26, 13))
	for range 20_000 {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		check(b.String())
	}
}
