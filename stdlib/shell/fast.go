package shell

// The fast path: most commands an agent runs are a few plain words joined
// by &&, ||, | or ;. For them the parse is built without the bash parser,
// and the result is the same as the parser's (TestFastPathMatchesParser
// and FuzzFastPath check this on every table case and a fuzz corpus).

// fastPlain marks the bytes a fast-path word may hold: letters, digits and
// punctuation that bash never treats specially inside or at the start of a
// word (no quotes, $, `, \, globs, braces, brackets, #, !, redirections).
var fastPlain = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-_./,:=+@%^" {
		t[c] = true
	}
	return t
}()

// fastReserved are the words that, in the command position, make bash read
// something other than a simple command.
var fastReserved = map[string]bool{
	"if": true, "then": true, "elif": true, "else": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "select": true,
	"function": true, "coproc": true, "time": true, "in": true, "declare": true, "local": true,
	"export": true, "readonly": true, "typeset": true, "nameref": true, "let": true,
}

// fastCmd is one simple command of the fast path.
type fastCmd struct {
	words      []shellWord
	start, end int  // source range of the words
	sep        byte // what follows: 0 (end), ';', '&' (&&), 'o' (||), '|'
	semi       int  // offset of the ';' when sep is ';'
}

// fast parses src on the fast path and reports whether it could. When it
// reports false it has changed nothing.
func (w *shellWalker) fast(src string) bool {
	var cmds []fastCmd
	cur := fastCmd{start: -1}
	push := func(sep byte) bool {
		if len(cur.words) == 0 {
			return false
		}
		cur.sep = sep
		cmds = append(cmds, cur)
		cur = fastCmd{start: -1}
		return true
	}
	n := len(src)
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case fastPlain[c]:
			j := i + 1
			for j < n && fastPlain[src[j]] {
				j++
			}
			if cur.start < 0 {
				cur.start = i
			}
			cur.end = j
			cur.words = append(cur.words, shellWord{text: src[i:j]})
			i = j
		case c == ';':
			cur.semi = i
			if !push(';') || i+1 < n && (src[i+1] == ';' || src[i+1] == '&') {
				return false
			}
			i++
		case c == '&':
			if i+1 >= n || src[i+1] != '&' || !push('&') {
				return false
			}
			i += 2
		case c == '|':
			if i+1 < n && src[i+1] == '|' {
				if !push('o') {
					return false
				}
				i += 2
				continue
			}
			if i+1 < n && src[i+1] == '&' || !push('|') {
				return false
			}
			i++
		default:
			return false
		}
	}
	if len(cur.words) > 0 {
		push(0)
	} else if len(cmds) == 0 || cmds[len(cmds)-1].sep != ';' {
		return false // empty, or ends with an operator
	}
	for _, fc := range cmds {
		first := fc.words[0].text
		if fastReserved[first] {
			return false
		}
		for k := 0; k < len(first); k++ {
			if first[k] == '=' {
				return false // an assignment
			}
		}
	}

	w.src = src
	prev := byte(';')
	for i := 0; i < len(cmds) && !w.full; {
		// A pipeline: cmds[i:j] joined by |.
		j := i + 1
		for j-1 < len(cmds) && cmds[j-1].sep == '|' {
			j++
		}
		if j-i == 1 {
			w.fastEmit(cmds[i], prev)
		} else {
			saved := w.upstream
			up := append([]string(nil), saved...)
			for k := i; k < j && !w.full; k++ {
				w.upstream = up[:len(up):len(up)]
				start := len(w.res.Commands)
				w.fastEmit(cmds[k], '|')
				for _, c := range w.res.Commands[start:] {
					if c.Depth == w.depth && c.Program != "" {
						up = append(up, c.Program)
					}
				}
			}
			w.upstream = saved
		}
		prev = cmds[j-1].sep
		i = j
	}
	return true
}

// fastEmit records one fast-path command. A command that is a statement of
// its own (not part of && || |) ends, as the parser has it, at its ';'.
func (w *shellWalker) fastEmit(fc fastCmd, prev byte) {
	end := fc.end
	if fc.sep == ';' && prev == ';' {
		end = fc.semi + 1
	}
	w.emit(fc.words, nil, nil, w.src[fc.start:end])
}
