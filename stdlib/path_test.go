package stdlib

import (
	"os"
	"os/user"
	"path"
	"path/filepath"
	"testing"

	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathGo(t *testing.T) {
	l := testLib(t)
	abs := []struct{ p, cwd, want string }{
		{"../secret", "/srv/app", "/srv/secret"},
		{"./x", "/srv", "/srv/x"},
		{"x/../x", "/srv", "/srv/x"},
		{"//x", "/srv", "/x"},
		{"/a//b///c", "/", "/a/b/c"},
		{"~", "/srv", "/home/me"},
		{"~/.ssh/id_rsa", "/srv", "/home/me/.ssh/id_rsa"},
		{"$HOME/.aws/credentials", "/srv", "/home/me/.aws/credentials"},
		{"${HOME}/.npmrc", "/srv", "/home/me/.npmrc"},
		{"~user/x", "/srv", "/srv/~user/x"},
		{"x", "~/proj", "/home/me/proj/x"},
		{"x", "", "/x"},
		{"x", "rel", "/rel/x"},
		{"../../../../etc/passwd", "/srv/app", "/etc/passwd"},
		{"/srv/app/../../etc", "/", "/etc"},
	}
	for _, tc := range abs {
		assert.Equal(t, tc.want, l.abs(tc.p, tc.cwd), "abs(%q, %q)", tc.p, tc.cwd)
	}
	normal := []struct {
		p    string
		fold bool
		want string
	}{
		{"./x/.env", false, "x/.env"},
		{".ENV", true, ".env"},
		{".Env", false, ".Env"},
		{".env.", false, ".env"},
		{".env ", false, ".env"},
		{".env. . ", false, ".env"},
		{".git./config", false, ".git/config"},
		{".env::$DATA", false, ".env"},
		{".env::$data", false, ".env"},
		{"secret.txt:hidden:$DATA", false, "secret.txt"},
		{`C:\Users\me\.env`, true, "c:/users/me/.env"},
		{`dir\..\.env`, false, ".env"},
		{"~/.SSH/", true, "/home/me/.ssh"},
		{"a/./b/../c//", false, "a/c"},
		{"...", false, "..."},
		{"..", false, ".."},
		{"", false, "."},
	}
	for _, tc := range normal {
		assert.Equal(t, tc.want, l.normal(tc.p, tc.fold), "normal(%q, %v)", tc.p, tc.fold)
	}
	within := []struct {
		p, d string
		fold bool
		want bool
	}{
		{"/srv/app/src/x.go", "/srv/app", false, true},
		{"/srv/app", "/srv/app", false, true},
		{"/srv/app/", "/srv/app/", false, true},
		{"/srv/app2", "/srv/app", false, false},
		{"/srv/app/../secret", "/srv/app", false, false},
		{"/srv/app/./x", "/srv/app", false, true},
		{"/Srv/App/x", "/srv/app", false, false},
		{"/Srv/App/x", "/srv/app", true, true},
		{"/etc/passwd", "/", false, true},
		{"rel/x", "/", false, false},
		{"x/y", ".", false, true},
		{"../x", ".", false, false},
		{"..", ".", false, false},
		{"~/.ssh/id_rsa", "~/.ssh", false, true},
		{"/home/me/.ssh./id_rsa", "/home/me/.ssh", false, true},
		{"/home/me/.SSH/id_rsa", "~/.ssh", true, true},
	}
	for _, tc := range within {
		assert.Equal(t, tc.want, l.within(tc.p, tc.d, tc.fold), "within(%q, %q, %v)", tc.p, tc.d, tc.fold)
	}
	assert.Equal(t, "", extOf(".env"))
	assert.Equal(t, ".local", extOf(".env.local"))
	assert.Equal(t, ".pem", extOf("/k/key.pem"))
	assert.Equal(t, ".gz", extOf("a.tar.gz"))
	assert.Equal(t, "", extOf("Makefile"))
	assert.Equal(t, "", extOf("..a"))
	assert.Equal(t, []string{"a", ".git", "config"}, segments("/a/.git/config"))
	assert.Equal(t, []string{}, segments("/"))
	assert.Equal(t, []string{"b"}, segments("a/../b"))
}

func TestPathThroughCEL(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	cases := map[string]any{
		`path.clean("a//b/./../c")`:         "a/c",
		`path.clean("/../etc")`:             "/etc",
		`path.expand("~/.ssh/id_rsa")`:      "/home/me/.ssh/id_rsa",
		`path.abs("../secret", "/srv/app")`: "/srv/secret",
		// ~user as the shell expands it: from the user database, not the
		// working directory; a user it does not know stays as written.
		`path.abs("~no-such-user-zz/x", "/srv/app")`:                 "/srv/app/~no-such-user-zz/x",
		`path.abs("~+/x", "/srv/app")`:                               "/srv/app/~+/x",
		`path.abs(p, cwd)`:                                           "/srv/.env",
		`path.normal("./x/.env. ")`:                                  "x/.env",
		`path.normal(".env::$DATA")`:                                 ".env",
		`path.normal("Config/.ENV", true)`:                           "config/.env",
		`path.within("/srv/app/src/x.go", "/srv/app")`:               true,
		`path.within("/srv/app2", "/srv/app")`:                       false,
		`path.within("/Srv/App/x", "/srv/app", true)`:                true,
		`path.within(path.abs(p, cwd), cwd)`:                         true,
		`path.base("/a/b/.env")`:                                     ".env",
		`path.dir("/a/b/c.txt")`:                                     "/a/b",
		`path.ext("key.pem")`:                                        ".pem",
		`path.ext(".env")`:                                           "",
		`path.isAbs("/etc")`:                                         true,
		`path.isAbs("etc")`:                                          false,
		`path.join("/a", "../b")`:                                    "/b",
		`path.segments("/a/.git/config")`:                            []string{"a", ".git", "config"},
		`".git" in path.segments(path.normal("x/.GIT./HEAD", true))`: true,
	}
	for expr, want := range cases {
		got := evalIn(t, env, s, expr, map[string]any{"p": "./sub/../.env", "cwd": "/srv"})
		assert.Equal(t, types.DefaultTypeAdapter.NativeToValue(want).Equal(got), types.True, "%s = %v, want %v", expr, got, want)
	}
}

func TestPathSymlinks(t *testing.T) {
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	secret := filepath.Join(dir, "home", ".ssh")
	require.NoError(t, os.MkdirAll(secret, 0o755))
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(ws, "keys")))
	require.NoError(t, os.Symlink("../../../outside/.cupcake", filepath.Join(ws, "dangling")))
	require.NoError(t, os.Symlink("keys", filepath.Join(ws, "chain")))
	require.NoError(t, os.Symlink("loop2", filepath.Join(ws, "loop1")))
	require.NoError(t, os.Symlink("loop1", filepath.Join(ws, "loop2")))

	off := testLib(t)
	on := testLib(t, WithSymlinks(true))
	assert.Equal(t, ws+"/keys/id_rsa", off.abs("keys/id_rsa", ws), "off: lexical only")
	assert.Equal(t, secret+"/id_rsa", on.abs("keys/id_rsa", ws))
	assert.Equal(t, secret+"/id_rsa", on.abs("chain/id_rsa", ws), "link chains")
	assert.Equal(t, filepath.Clean(ws+"/../../../outside/.cupcake"), on.abs("dangling", ws), "dangling link target followed lexically")
	assert.Equal(t, dir+"/home", on.abs("keys/..", ws), "'..' applies after resolving")
	assert.NotPanics(t, func() { on.abs("loop1/x", ws) })
	assert.Equal(t, "/nonexistent/a/b", on.abs("/nonexistent/a/./b", "/"))

	env := testEnv(t, on)
	got := evalIn(t, env, on.NewCallScope(), `path.within(path.abs("keys/id_rsa", cwd), p)`, map[string]any{"cwd": ws, "p": secret})
	assert.Equal(t, types.True, got)
}

func TestNewOptions(t *testing.T) {
	_, err := New(WithHome("relative"))
	assert.Error(t, err)
	_, err = New(WithHome(""))
	assert.Error(t, err)
	_, err = New(WithVersion(0))
	assert.Error(t, err)
	_, err = New(WithVersion(LatestVersion + 1))
	assert.Error(t, err)
	l, err := New(WithHome(`C:\Users\me`), nil)
	require.NoError(t, err)
	assert.Equal(t, "C:/Users/me", l.Home())
	l, err = New()
	require.NoError(t, err)
	assert.NotEmpty(t, l.Home())
	assert.Equal(t, LatestVersion, l.Version())
}

// TestTildeUser: ~user is the user's home directory from the user
// database, as the shell expands it.
func TestTildeUser(t *testing.T) {
	u, err := user.Lookup("root")
	if err != nil {
		t.Fatalf("the user database has no root: %v", err)
	}
	l := testLib(t)
	env := testEnv(t, l)
	got := evalIn(t, env, l.NewCallScope(), `path.abs("~root/.ssh/id_rsa", "/srv/app")`, map[string]any{})
	if want := path.Join(u.HomeDir, ".ssh/id_rsa"); got.Value() != want {
		t.Errorf("path.abs(~root/.ssh/id_rsa) = %v, want %v", got, want)
	}
}

// TestProcSelfNotResolved: /proc/self names the process that reads it, so
// resolving it in celguard would name celguard's process: it stays as
// written with symlink resolution on.
func TestProcSelfNotResolved(t *testing.T) {
	l := testLib(t, WithSymlinks(true))
	for _, p := range []string{"/proc/self/environ", "/proc/thread-self/environ", "/proc/self/task/1/environ", "/dev/fd/3"} {
		if got := l.abs(p, "/srv"); got != p {
			t.Errorf("path.abs(%q) = %q, want it unresolved", p, got)
		}
	}
}
