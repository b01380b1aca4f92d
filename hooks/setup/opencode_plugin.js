// celguard's OpenCode plugin, written by `celguard hook install opencode`.
// It runs the command below for each tool call, prompt and session event,
// with one JSON event on stdin, and does what it answers: a deny refuses
// the call (the model reads the reason), a rewrite replaces the arguments
// or the output. Any failure refuses the call. Reinstall it with celguard
// hook install opencode rather than editing it; celguard doctor checks it.
import { spawn } from "node:child_process"

// celguard:command
const COMMAND = __COMMAND__
const TIMEOUT_MS = 30000

function run(event) {
  return new Promise((resolve) => {
    let out = "", err = "", done = false
    const finish = (r) => { if (!done) { done = true; clearTimeout(timer); resolve(r) } }
    let child
    try {
      child = spawn("/bin/sh", ["-c", COMMAND], { cwd: event.cwd || process.cwd(), stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      return finish({ code: -1, out: "", err: "celguard: the hook command cannot start: " + e.message })
    }
    const timer = setTimeout(() => { child.kill("SIGKILL"); finish({ code: -1, out, err: "celguard: no answer within " + TIMEOUT_MS / 1000 + "s" }) }, TIMEOUT_MS)
    child.stdout.on("data", (d) => { out += d })
    child.stderr.on("data", (d) => { err += d })
    child.on("error", (e) => finish({ code: -1, out, err: "celguard: the hook command cannot start: " + e.message }))
    child.on("close", (code) => finish({ code: code === null ? -1 : code, out, err }))
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(event))
  })
}

// answer runs one event and returns the parsed answer, null to carry on
// (failing open), or throws the failure.
async function answer(event) {
  const r = await run(event)
  if (r.code === 1) return null // --fail-open
  const reason = r.err.trim() || "celguard: the hook failed (exit " + r.code + ")"
  if (r.code !== 0) throw new Error(reason)
  try {
    return JSON.parse(r.out)
  } catch (e) {
    throw new Error("celguard: the hook's answer is not JSON: " + r.out.slice(0, 200))
  }
}

export const CelguardPlugin = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const a = await answer({ hook_event_name: "tool.execute.before", session_id: input.sessionID, cwd: directory,
      tool_name: input.tool, tool_input: output.args, tool_use_id: input.callID })
    if (!a) return
    if (a.decision !== "allow") throw new Error(a.reason || "celguard: refused")
    if (a.args && typeof a.args === "object") {
      // OpenCode runs the very object it passed: rewrite it in place.
      for (const k of Object.keys(output.args)) if (!(k in a.args)) delete output.args[k]
      Object.assign(output.args, a.args)
    }
  },
  "tool.execute.after": async (input, output) => {
    let a
    try {
      a = await answer({ hook_event_name: "tool.execute.after", session_id: input.sessionID, cwd: directory,
        tool_name: input.tool, tool_input: input.args, tool_use_id: input.callID,
        tool_response: { output: output.output, title: output.title } })
    } catch (e) {
      output.output = e.message + ". celguard withheld this output"
      return
    }
    if (!a) return
    if (typeof a.output === "string") output.output = a.output
    if (a.context) output.output = output.output + "\n\n" + a.context
  },
  "experimental.text.complete": async (input, output) => {
    // The model's whole answer, before OpenCode stores and prints it.
    let a
    try {
      a = await answer({ hook_event_name: "experimental.text.complete", session_id: input.sessionID, cwd: directory,
        text: output.text })
    } catch (e) {
      output.text = e.message + ". celguard withheld this answer"
      return
    }
    if (a && typeof a.text === "string") output.text = a.text
  },
  "chat.message": async (input, output) => {
    const texts = (output.parts || []).filter((p) => p.type === "text")
    let a
    try {
      a = await answer({ hook_event_name: "chat.message", session_id: input.sessionID, cwd: directory,
        prompt: texts.map((p) => p.text).join("\n") })
    } catch (e) {
      console.error(e.message)
      return
    }
    // A warning for the model (policies that do not compile): after the prompt.
    if (a && a.context && texts.length > 0) texts[texts.length - 1].text += "\n\n" + a.context
  },
  event: async ({ event }) => {
    const names = { "session.created": 1, "session.idle": 1, "session.deleted": 1 }
    if (!names[event.type]) return
    const id = event.properties?.sessionID || event.properties?.info?.id
    if (!id) return
    try {
      await answer({ hook_event_name: event.type, session_id: id, cwd: directory })
    } catch (e) {
      console.error(e.message)
    }
  },
})
