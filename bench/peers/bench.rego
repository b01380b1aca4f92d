# The 20 rules of the celguard benchmark policy (bench20.yaml) in Rego.
# Every rule that matches adds [-priority, position, id, verdict] to
# `matched`; the decision is the smallest entry: highest priority first,
# then file order — first match wins. No match: allow. Each body starts
# with an equality test of input.tool, which OPA's rule index uses to skip
# the rules of other tools (a rule for Write and Edit is written twice).
package celguard.bench

default cmd := ""

cmd := input.args.command if is_string(input.args.command)

default fpath := ""

fpath := input.args.file_path if is_string(input.args.file_path)

matched contains [-100, 1, "deny-rm-root", "block"] if {
	input.tool == "Bash"
	regex.match(`rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)`, cmd)
}

matched contains [-100, 2, "deny-mkfs", "block"] if {
	input.tool == "Bash"
	regex.match(`\bmkfs(\.[a-z0-9]+)?\b`, cmd)
}

matched contains [-100, 3, "deny-dd-dev", "block"] if {
	input.tool == "Bash"
	regex.match(`\bdd\b.*\bof=/dev/`, cmd)
}

matched contains [-100, 4, "deny-fork-bomb", "block"] if {
	input.tool == "Bash"
	regex.match(`:\(\)\s*\{\s*:\|:&\s*\};:`, cmd)
}

matched contains [-100, 5, "deny-chmod-777-root", "block"] if {
	input.tool == "Bash"
	regex.match(`chmod\s+-R\s+777\s+/(\s|$)`, cmd)
}

matched contains [-100, 6, "deny-curl-sh", "block"] if {
	input.tool == "Bash"
	regex.match(`(curl|wget)[^|]*\|\s*(ba|z)?sh\b`, cmd)
}

matched contains [-50, 7, "ask-sudo", "ask"] if {
	input.tool == "Bash"
	regex.match(`(^|[;&|]\s*)sudo\s`, cmd)
}

matched contains [-50, 8, "ask-force-push", "ask"] if {
	input.tool == "Bash"
	regex.match(`git\s+push\s+.*(--force|-f)\b`, cmd)
}

matched contains [-50, 9, "ask-reset-hard", "ask"] if {
	input.tool == "Bash"
	regex.match(`git\s+reset\s+--hard`, cmd)
}

matched contains [-50, 10, "ask-no-verify", "ask"] if {
	input.tool == "Bash"
	regex.match(`git\s+commit\s+.*--no-verify`, cmd)
}

matched contains [-50, 11, "ask-npm-publish", "ask"] if {
	input.tool == "Bash"
	regex.match(`npm\s+publish`, cmd)
}

matched contains [-50, 12, "ask-docker", "ask"] if {
	input.tool == "Bash"
	regex.match(`docker\s+(run|exec)`, cmd)
}

matched contains [-80, 13, "deny-write-env", "block"] if {
	input.tool == "Write"
	regex.match(`(^|/)\.env(\.[a-z]+)?$`, fpath)
	not endswith(fpath, ".env.example")
}

matched contains [-80, 13, "deny-write-env", "block"] if {
	input.tool == "Edit"
	regex.match(`(^|/)\.env(\.[a-z]+)?$`, fpath)
	not endswith(fpath, ".env.example")
}

matched contains [-80, 14, "deny-write-ssh", "block"] if {
	input.tool == "Write"
	regex.match(`(^|/)\.ssh/`, fpath)
}

matched contains [-80, 14, "deny-write-ssh", "block"] if {
	input.tool == "Edit"
	regex.match(`(^|/)\.ssh/`, fpath)
}

matched contains [-80, 15, "deny-write-keys", "block"] if {
	input.tool == "Write"
	regex.match(`\.(pem|key)$`, fpath)
}

matched contains [-80, 15, "deny-write-keys", "block"] if {
	input.tool == "Edit"
	regex.match(`\.(pem|key)$`, fpath)
}

matched contains [-70, 16, "ask-write-outside", "ask"] if {
	input.tool == "Write"
	not startswith(fpath, concat("", [input.cwd, "/"]))
}

matched contains [-70, 16, "ask-write-outside", "ask"] if {
	input.tool == "Edit"
	not startswith(fpath, concat("", [input.cwd, "/"]))
}

matched contains [-10, 17, "allow-safe-read", "allow"] if input.tool == "Read"

matched contains [-10, 17, "allow-safe-read", "allow"] if input.tool == "Glob"

matched contains [-10, 17, "allow-safe-read", "allow"] if input.tool == "Grep"

matched contains [-10, 18, "allow-git-read", "allow"] if {
	input.tool == "Bash"
	regex.match(`^git\s+(status|log|diff|show|branch)\b`, cmd)
}

matched contains [-10, 19, "allow-build", "allow"] if {
	input.tool == "Bash"
	regex.match(`^(go\s+(build|test|vet)|npm\s+test|make)\b`, cmd)
}

matched contains [-10, 20, "allow-ls", "allow"] if {
	input.tool == "Bash"
	regex.match(`^(ls|cat|head|tail|wc|pwd|echo)\b`, cmd)
}

default decision := [0, 0, "", "allow"]

decision := min(matched) if count(matched) > 0
