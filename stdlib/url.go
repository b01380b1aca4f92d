package stdlib

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// URL returns the url library (celguard.lib.url): parse URLs the way a
// browser or HTTP client would reach them, and match hosts against allowed
// domains. Domain pattern literals are checked when the policy compiles.
//
// Parsing is lenient where clients are: surrounding white space and tabs or
// newlines inside are dropped, "\" counts as "/" for http, https, ws, wss and
// ftp, and a string without a scheme ("example.com/x", "localhost:8080") is
// read as a host. Hosts are lower-cased without a trailing dot.
//
// # url.parse
//
// Parses a URL into a map with ok, error, scheme, user, host, port, path,
// raw_query, query (map(string, list(string))) and fragment. Never an error:
// a string that does not parse has ok == false.
//
//	url.parse(<string>) -> <celguard.url.URL>
//
// Examples:
//
//	url.parse("https://User@API.Example.com.:8443/v1?q=1#f").host // "api.example.com"
//	url.parse("https://x.io/a?q=1&q=2").query.q                   // ["1", "2"]
//	url.parse("http://[::1").ok                                   // false
//
// Introduced in stdlib version 1.
//
// # url.host
//
// The normalised host of a URL ("" when it does not parse).
//
//	url.host(<string>) -> <string>
//
// Examples:
//
//	url.host("http://good.com@evil.com/") // "evil.com"
//	url.host("http://evil.com\\@good.com") // "evil.com"
//
// Introduced in stdlib version 1.
//
// # url.hostMatches
//
// Reports whether the host of a URL (or a bare host) matches a domain
// pattern, or any of a list: "example.com" matches that host only,
// "*.example.com" any subdomain at any depth but not example.com itself, "*"
// any host. Matching ignores case and a trailing dot. A URL that does not
// parse matches nothing.
//
//	url.hostMatches(<string>, <string>) -> <bool>
//	url.hostMatches(<string>, <list(string)>) -> <bool>
//
// Examples:
//
//	url.hostMatches("https://api.github.com/x", "*.github.com")             // true
//	url.hostMatches("https://github.com.evil.io", ["github.com", "*.github.com"]) // false
//
// Introduced in stdlib version 1.
func (l *Lib) URL() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "url"})
}

func (l *Lib) urlFns() []*fnDef {
	s := []*cel.Type{cel.StringType}
	return []*fnDef{
		{ns: "url", name: "url.parse", version: 1, ovs: []*ovDef{{
			id: "url_parse_string", args: s, result: urlType, cost: linearCost(20, 0, 0.5),
			unary: func(v ref.Val) ref.Val {
				u, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return urlToVal(ParseURL(string(u)))
			},
		}}},
		{ns: "url", name: "url.host", version: 1, ovs: []*ovDef{{
			id: "url_host_string", args: s, result: cel.StringType, cost: linearCost(10, 0, 0.5).withSize(firstArgSize(0)),
			unary: func(v ref.Val) ref.Val {
				u, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return types.String(ParseURL(string(u)).Host)
			},
		}}},
		{ns: "url", name: "url.hostMatches", version: 1, ovs: []*ovDef{
			{id: "url_hostMatches_string_string", args: []*cel.Type{cel.StringType, cel.StringType}, result: cel.BoolType,
				cost: linearCost(10, 0, 0.5), binary: urlHostMatches},
			{id: "url_hostMatches_string_list", args: []*cel.Type{cel.StringType, listString}, result: cel.BoolType,
				cost: linearCost(10, 1, 2), binary: urlHostMatches},
		}},
	}
}

// ParsedURL is the result of ParseURL.
type ParsedURL struct {
	OK       bool
	Error    string
	Scheme   string // lower-case
	User     string
	Host     string // lower-case, no trailing dot, no brackets
	Port     string
	Path     string
	RawQuery string
	Query    map[string][]string
	Fragment string
}

var schemeOnly = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:[^0-9]`) })

// ParseURL parses a URL as described for url.parse.
func ParseURL(raw string) ParsedURL {
	s := strings.TrimSpace(raw)
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	if !strings.Contains(s, "://") && !strings.HasPrefix(s, "//") && !schemeOnly().MatchString(s) {
		s = "//" + s
	}
	if i := strings.Index(s, "://"); i > 0 {
		switch strings.ToLower(s[:i]) {
		case "http", "https", "ws", "wss", "ftp":
			s = s[:i] + "://" + strings.ReplaceAll(s[i+3:], `\`, "/")
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return ParsedURL{Error: err.Error(), Query: map[string][]string{}}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	q, _ := url.ParseQuery(u.RawQuery)
	if q == nil {
		q = map[string][]string{}
	}
	return ParsedURL{
		OK:       true,
		Scheme:   strings.ToLower(u.Scheme),
		User:     u.User.Username(),
		Host:     host,
		Port:     u.Port(),
		Path:     u.Path,
		RawQuery: u.RawQuery,
		Query:    q,
		Fragment: u.Fragment,
	}
}

func urlToVal(p ParsedURL) ref.Val {
	q := make(map[ref.Val]ref.Val, len(p.Query))
	for k, vs := range p.Query {
		q[str(k)] = types.NewStringList(adapter, vs)
	}
	return newObj(urlType, urlKeys, types.Bool(p.OK), str(p.Error), str(p.Scheme), str(p.User), str(p.Host),
		str(p.Port), str(p.Path), str(p.RawQuery), types.NewRefValMap(adapter, q), str(p.Fragment))
}

var hostLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$`) })

// validateDomainPattern checks a pattern of url.hostMatches: "*", a host
// name, an IP address, or "*." followed by a host name.
func validateDomainPattern(p string) error {
	if p == "*" {
		return nil
	}
	if p == "" {
		return fmt.Errorf("empty domain pattern")
	}
	h := strings.TrimSuffix(strings.ToLower(p), ".")
	if ip := strings.Trim(h, "[]"); net.ParseIP(ip) != nil {
		return nil
	}
	if strings.ContainsAny(h, "/:@?#") {
		return fmt.Errorf("domain pattern %q must be a host name, without scheme, port or path", p)
	}
	rest := strings.TrimPrefix(h, "*.")
	if strings.Contains(rest, "*") {
		return fmt.Errorf("domain pattern %q: a wildcard is only allowed as a leading \"*.\"", p)
	}
	for _, label := range strings.Split(rest, ".") {
		if !hostLabel().MatchString(label) {
			return fmt.Errorf("domain pattern %q has an invalid label %q", p, label)
		}
	}
	return nil
}

// HostMatches reports whether host (already normalised, see ParseURL) matches
// the domain pattern.
func HostMatches(host, pattern string) bool {
	if host == "" {
		return false
	}
	p := strings.TrimSuffix(strings.ToLower(pattern), ".")
	p = strings.Trim(p, "[]")
	switch {
	case p == "*":
		return true
	case strings.HasPrefix(p, "*."):
		return strings.HasSuffix(host, p[1:])
	}
	return host == p
}

func urlHostMatches(u, pats ref.Val) ref.Val {
	us, ok := u.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(u)
	}
	host := ParseURL(string(us)).Host
	check := func(p string) ref.Val {
		if err := validateDomainPattern(p); err != nil {
			return types.NewErr("url.hostMatches: %v", err)
		}
		return types.Bool(HostMatches(host, p))
	}
	if p, ok := pats.(types.String); ok {
		return check(string(p))
	}
	list, ok := pats.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(pats)
	}
	n, _ := list.Size().(types.Int)
	for i := types.Int(0); i < n; i++ {
		p, ok := list.Get(i).(types.String)
		if !ok {
			return types.NewErr("url.hostMatches: expected a list of strings")
		}
		if r := check(string(p)); r != types.False {
			return r
		}
	}
	return types.False
}
