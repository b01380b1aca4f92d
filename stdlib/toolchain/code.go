package toolchain

import (
	"regexp"
	"strings"
	"sync"
)

// capability is one thing program code can do that a build file must not
// do unseen: run a program, reach the network, write or delete files
// outside its build output, read the environment's secrets, or reach any
// of these indirectly (eval, dynamic imports, reflection).
type capability struct {
	re   *regexp.Regexp
	what string
}

func caps(pairs ...string) []capability {
	out := make([]capability, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, capability{regexp.MustCompile(pairs[i]), pairs[i+1]})
	}
	return out
}

// codeRules are the conservative checks of program code, per language: a
// content that names none of its language's capabilities passes (its code
// can compute, declare and configure, but not run a program, reach the
// network, change files or reach those indirectly); one that names any is
// unproven, and a policy asks. The lists name the capability, not a
// library's spelling of it alone: indirection (eval, exec, dynamic import,
// reflection on names) is itself a capability, so a capability cannot be
// reached without naming one of these. docs/policies.md prints them.
//
// They compile on first use (sync.OnceValue): compiling them in package
// init cost every celguard process, including hooks that never look at
// code, 0.9 MB and 5,000 allocations.
var codeRules = sync.OnceValue(func() map[string][]capability {
	return map[string][]capability{
		"python": caps(
			`\b(subprocess|pty|popen2|commands|multiprocessing|asyncio\.create_subprocess\w*)\b`, "runs programs",
			`\bos\s*\.\s*(system|popen|exec\w*|spawn\w*|fork\w*|posix_spawn\w*|startfile|kill\w*|remove|unlink|rmdir|removedirs|rename|replace|chmod|chown|putenv|environ|getenv|setuid|link|symlink|truncate|write|open|dup2|makedirs|mkdir)\b`, "uses os to run programs, change files or read the environment",
			`\bfrom\s+os\s+import\b(?:[^\n]*\b(system|popen|exec\w*|spawn\w*|fork|remove|unlink|environ|getenv|putenv|chmod|rename|replace|kill|open|write)\b|\s*\*)`, "imports os's program, file or environment functions",
			`\bimport\s+([\w.]+\s*,\s*)*os\s+as\b`, "imports os under another name",
			`\b(socket|urllib\w*|http\.client|httplib|requests|httpx|aiohttp|urllib3|ftplib|smtplib|telnetlib|paramiko|xmlrpc|websocket\w*|pycurl)\b`, "reaches the network",
			`\b(shutil|tempfile\.mkdtemp)\b|\.(write_text|write_bytes|unlink|rmdir|rename|chmod|touch|symlink_to)\s*\(`, "changes files",
			`(?:^|[^.\w])(exec|eval|compile|__import__|getattr|setattr|delattr|globals|locals|vars|open|breakpoint|input)\s*\(`, "runs or reaches code by name, or opens files",
			`\b(importlib|imp|runpy|ctypes|cffi|marshal|pickle|dill|cloudpickle|shelve|builtins|__builtins__|sys\.modules|sys\.meta_path|sys\.path_hooks|sitecustomize|zipimport|webbrowser)\b|\bimport\s+code(op)?\b`, "loads code dynamically",
			`__(class|subclasses|globals|code|dict|base|bases|mro|getattribute|reduce|loader|spec)__`, "reaches objects by reflection",
			`\b(base64|codecs|binascii|zlib|bz2|lzma)\b|bytes\.fromhex|\\x[0-9a-fA-F]{2}`, "decodes hidden text",
			`(?m)^\s*import\s+[\w.]+\s*;|\bsetup\s*\([^)]*cmdclass`, "overrides setuptools commands",
		),
		"rust": caps(
			`std::process|\bprocess::|\bCommand::|\buse\s+[\w:{, ]*\bCommand\b`, "runs programs",
			`std::net|\bnet::|\b(TcpStream|TcpListener|UdpSocket|reqwest|ureq|hyper|curl|isahc|attohttpc|minreq|surf)\b`, "reaches the network",
			`\bfs::(write|remove\w*|rename|copy|create_dir\w*|set_permissions|hard_link|soft_link)\b|\b(File::create|OpenOptions|symlink)\b`, "changes files",
			`\benv::(vars|vars_os|set_var|remove_var|home_dir)\b`, "reads or changes the environment",
			`\benv::var(_os)?\s*\(\s*"(HOME|USER|PATH|AWS|GITHUB|GH_|NPM|SSH|GPG|TOKEN|SECRET|API|PASS|KEY)`, "reads an environment variable cargo does not set",
			`\benv::var(_os)?\s*\(\s*[^"\s]`, "reads an environment variable named at run time",
			`\b(unsafe|extern|libc|libloading|dlopen|asm!|global_asm!|include!|include_bytes!|home::|dirs::|std::os)\b`, "reaches code or the system outside the language",
		),
		"javascript": caps(
			`child_process|\bBun\.(spawn\w*|\$)|\bDeno\.(Command|run)|\bexeca\b|\bzx\b|shelljs`, "runs programs",
			`\b(require|import)\s*\(\s*['"](node:)?(http|https|http2|net|tls|dgram|dns)['"]|\bfrom\s+['"](node:)?(http|https|http2|net|tls|dgram|dns)['"]|\b(fetch|XMLHttpRequest|WebSocket|EventSource|axios|got|request|undici|node-fetch)\b\s*\(`, "reaches the network",
			`\b(writeFile\w*|appendFile\w*|rm|rmSync|rmdir\w*|unlink\w*|rename\w*|chmod\w*|symlink\w*|copyFile\w*|cp|cpSync|createWriteStream)\s*\(`, "changes files",
			`\b(eval|Function|setTimeout\s*\(\s*['"]|vm\.|require\s*\(\s*[^'"\s)]|import\s*\(\s*[^'"\s)])|\bnew\s+Function\b|\bprocess\.(binding|dlopen|mainModule)|\bmodule\.constructor|constructor\s*\.\s*constructor|__proto__|globalThis\s*\[`, "runs or reaches code by name",
			`\b(atob|Buffer\.from\s*\([^)]*(base64|hex))|\\x[0-9a-fA-F]{2}|\\u00[0-9a-fA-F]{2}|String\.fromCharCode`, "decodes hidden text",
			`Object\.(keys|entries|values|assign)\s*\([^)]*process\.env\b|JSON\.stringify\s*\(\s*process\.env\b|\.\.\.\s*process\.env\b|process\.env\s*\[\s*[^'"\s\]]`, "reads the whole environment",
		),
		"ruby": caps(
			"`|%x|\\b(system|exec|spawn|fork|syscall|IO\\.popen|Open3|PTY|Process)\\b", "runs programs",
			`\b(Net::|Socket|TCPSocket|UDPSocket|open-uri|URI\.open|HTTParty|Faraday|RestClient|Excon)\b`, "reaches the network",
			`\b(File\.(write|delete|unlink|rename|chmod|symlink)|FileUtils|IO\.write|Dir\.(rmdir|delete|unlink))\b`, "changes files",
			`\b(eval|instance_eval|class_eval|module_eval|instance_exec|send|public_send|__send__|const_get|constantize|binding|Kernel|ObjectSpace|Fiddle|DL|load|require_relative\s+[^'"]|require\s+[^'"\s])\b|\bopen\s*\(`, "runs or reaches code by name",
			`\bENV\b(?:\.(to_h|each|keys|values|select|map|to_a)|\s*$)`, "reads the whole environment",
			`\b(Base64|unpack1?|pack)\b`, "decodes hidden text",
		),
		"gradle": caps(
			`\b(exec|javaexec|providers\.exec|project\.exec)\s*[({]|\.execute\s*\(|\b(commandLine|ProcessBuilder|Runtime)\b|\btype\s*:\s*Exec\b|\bExec\b\s*[)>]`, "runs programs",
			`\b(URL|URI)\s*\(|\.openConnection|\.toURL\s*\(|\bnew\s+Socket\b|\bHttpClient\b`, "reaches the network",
			`\bapply\s*\(?\s*from\s*[:=]\s*['"]https?:|\bbuildscript\s*\{[^}]*url\s*[=(]\s*['"]http:`, "loads a build script from the network",
			`\b(evaluate|GroovyShell|Eval\.me|ScriptEngine|Class\.forName|ClassLoader|getMethod|invokeMethod|\.delete\s*\(|deleteDir|ant\.)\b`, "runs or reaches code by name, or deletes files",
		),
		"maven": caps(
			`exec-maven-plugin|maven-antrun-plugin|groovy-maven-plugin|gmavenplus-plugin|gmaven-plugin|maven-invoker-plugin|<exec\b|<executable>|<java\b`, "runs programs",
			`<extension>|-javaagent|-agentpath|-agentlib|-XX:OnError|-XX:OnOutOfMemoryError`, "loads an extension or agent into the build",
		),
		"cmake": caps(
			`(?i)\b(execute_process|exec_program|run_command|run_target)\s*\(`, "runs programs when the project is configured",
			`(?i)\bfile\s*\(\s*(DOWNLOAD|UPLOAD)|\bExternalProject_Add\b|\bFetchContent_Declare\b|\bsubproject\s*\(`, "downloads code",
			`(?i)\b(install\s*\(\s*(CODE|SCRIPT)|cmake_language\s*\(\s*(EVAL|CALL)|include\s*\(\s*https?:)`, "runs code from text",
		),
		"msbuild": caps(
			`(?i)<Exec\b|<Exec\s|Command\s*=`, "runs programs",
			`(?i)<UsingTask\b|TaskFactory|<Code\b|<DownloadFile\b|RoslynCodeTaskFactory`, "runs inline code or downloads",
		),
		"powershell": caps(`.`, "is PowerShell, which the shell analyser does not read"),
		"ps1":        caps(`.`, "is PowerShell, which the shell analyser does not read"),
		"pwsh":       caps(`.`, "is PowerShell, which the shell analyser does not read"),
	}
})

// code passes program code through its language's capability check.
func (a *analysis) code(lang, content string) {
	switch lang {
	case "py":
		lang = "python"
	case "js":
		lang = "javascript"
	}
	rules, ok := codeRules()[lang]
	if !ok {
		a.unproven("it is " + lang + " code, which no check reads")
		return
	}
	for _, c := range rules {
		if loc := c.re.FindStringIndex(content); loc != nil {
			a.unproven(lang + " code that " + c.what + " (" + short(strings.TrimSpace(content[loc[0]:loc[1]])) + ")")
		}
	}
}

// CodeLanguages returns the languages codeRules checks, for the docs.
func CodeLanguages() map[string][]string {
	out := map[string][]string{}
	for lang, rules := range codeRules() {
		for _, r := range rules {
			out[lang] = append(out[lang], r.what)
		}
	}
	return out
}
