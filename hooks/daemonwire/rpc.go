package daemonwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/celguard/celguard/internal/jsonkind"
)

// The hook's wire to the daemon is one JSON-RPC 2.0 request and one
// response per connection on the daemon's socket, each one line (the
// newline-delimited framing of MCP's stdio transport), encoded and decoded
// with the official MCP Go SDK's jsonrpc package. The daemon tells it from
// HTTP on the same socket by its first byte: a JSON-RPC message starts
// with '{', an HTTP request with its method. The request's id is its
// nonce; its params are HookParams, its result HookResult, and the MAC
// covers exactly what it covers over HTTP (Answer, Sum). Bytes the MAC
// covers (the event, the answer) travel as base64, so that no
// re-encoding of JSON between the two ends can change them.
//
// The client's side (Call) needs neither net nor net/http, so the lean
// client links neither: with cgo on (`go install`), net links runtime/cgo
// and makes the binary dynamically linked, and net/http's initialisation
// costs every run (issue 26).

// MethodHook is the JSON-RPC method of a hook event.
const MethodHook = "celguard/hook"

// HookParams is a hook event sent to the daemon: MethodHook's params.
type HookParams struct {
	// Nonce is the request's fresh nonce (hex, NonceBytes); it is also the
	// request's id.
	Nonce string `json:"nonce"`
	// Host is the host's name (claude-code, codex ...).
	Host string `json:"host"`
	// WorkDir is the hook process's working directory: the project whose
	// layer decides.
	WorkDir string `json:"work_dir"`
	// Digest is the policy digest the hook would compute (HeaderDigest's
	// meaning on a request): empty from the lean client.
	Digest string `json:"digest,omitempty"`
	// Event is the host's event, as read from stdin.
	Event []byte `json:"event"`
	// AgentVersion, TraceParent and TraceState are the hook's
	// CELGUARD_AGENT_VERSION, TRACEPARENT and TRACESTATE for the daemon's
	// telemetry (HeaderAgentVersion): not under the MAC, they change what
	// telemetry says, never the decision.
	AgentVersion string `json:"agent_version,omitempty"`
	TraceParent  string `json:"traceparent,omitempty"`
	TraceState   string `json:"tracestate,omitempty"`
}

// HookResult is the daemon's signed answer: MethodHook's result.
type HookResult struct {
	// Digest, Version and Manifest mean what HeaderDigest, HeaderVersion
	// and HeaderManifest mean on an answer.
	Digest   string `json:"digest"`
	Version  string `json:"version"`
	Manifest string `json:"manifest"`
	// MAC is Sum's, hex.
	MAC string `json:"mac"`
	// Body is the command answer (CommandAnswer, JSON).
	Body []byte `json:"body"`
}

// Answer is what r's MAC covers, for the request p.
func (r HookResult) Answer(p HookParams) Answer {
	return Answer{Nonce: p.Nonce, Host: p.Host, Event: p.Event, WorkDir: p.WorkDir, Digest: r.Digest,
		Version: r.Version, Manifest: r.Manifest, Body: r.Body}
}

// MaxAnswerLine bounds the line of a daemon's answer a client reads: a
// body of MaxAnswer and a manifest of MaxEncoded, with room for the rest.
const MaxAnswerLine = (MaxAnswer+2)/3*4 + MaxEncoded + 64<<10

// MaxRequestLine is the bound on a request line for a daemon that takes
// events up to maxEvent bytes.
func MaxRequestLine(maxEvent int64) int64 { return int64(base64Len(int(maxEvent))) + 64<<10 }

// base64Len is the length of n bytes in standard base64 (encoding/json's
// []byte).
func base64Len(n int) int { return (n + 2) / 3 * 4 }

// ConnTimeout bounds a daemon's wait for a client's request line, as
// HTTP's ReadHeaderTimeout does.
const ConnTimeout = 10 * time.Second

// ErrNoDaemonSockets is Call's error on a platform without unix sockets.
var ErrNoDaemonSockets = errors.New("no unix sockets on this platform")

// Call sends p to the daemon on socket and returns its result, within
// ctx's deadline (and ConnectTimeout to connect): it checks the framing
// and that the answer is the response to this request (its id is p's
// nonce), nothing that the MAC covers (Accept, Verify). Any failure, an
// error response among them, is an error: the caller answers another way.
func Call(ctx context.Context, socket string, p HookParams) (HookResult, error) {
	line, err := EncodeRequest(p)
	if err != nil {
		return HookResult{}, err
	}
	f, err := dial(socket, ConnectTimeout)
	if err != nil {
		return HookResult{}, err
	}
	defer f.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := f.SetDeadline(dl); err != nil {
			return HookResult{}, err
		}
	}
	// A cancelled ctx ends the wait at once.
	stop := context.AfterFunc(ctx, func() { _ = f.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := f.Write(line); err != nil {
		return HookResult{}, err
	}
	answer, err := ReadLine(f, MaxAnswerLine)
	if err != nil {
		return HookResult{}, err
	}
	return DecodeResponse(answer, p.Nonce)
}

// EncodeRequest is the request line of p: a JSON-RPC call of MethodHook
// whose id is p's nonce, and a newline.
func EncodeRequest(p HookParams) ([]byte, error) {
	if b, ok := encodeRequestPlain(p); ok {
		return b, nil
	}
	return encodeRequest(p)
}

// encodeRequest is EncodeRequest by encoding/json and the SDK's jsonrpc.
func encodeRequest(p HookParams) ([]byte, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(p.Nonce)
	if err != nil {
		return nil, err
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: MethodHook, Params: params})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// encodeRequestPlain is encodeRequest's line written directly, byte for
// byte the same (TestEncodeRequestPlain, FuzzEncodeRequestPlain), when
// every string of p is plainJSON; ok is false otherwise. A client is a
// process that sends one request: encoding/json's and the SDK's
// reflection over the two types cost it about 0.7M instructions, half of
// the lean client's.
func encodeRequestPlain(p HookParams) (line []byte, ok bool) {
	strs := [...]string{p.Nonce, p.Host, p.WorkDir, p.Digest, p.AgentVersion, p.TraceParent, p.TraceState}
	n := len(`{"jsonrpc":"2.0","id":"","method":"celguard/hook","params":{"nonce":"","host":"","work_dir":"","digest":"","event":null,"agent_version":"","traceparent":"","tracestate":""}}`) + 1
	for _, s := range strs {
		if !jsonkind.Plain(s) {
			return nil, false
		}
		n += len(s)
	}
	n += len(p.Nonce) + base64.StdEncoding.EncodedLen(len(p.Event))
	b := make([]byte, 0, n)
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, p.Nonce...)
	b = append(b, `","method":"`+MethodHook+`","params":{"nonce":"`...)
	b = append(b, p.Nonce...)
	b = append(b, `","host":"`...)
	b = append(b, p.Host...)
	b = append(b, `","work_dir":"`...)
	b = append(b, p.WorkDir...)
	b = append(b, '"')
	b = appendOptional(b, `,"digest":"`, p.Digest)
	b = append(b, `,"event":`...)
	if p.Event == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, p.Event)
		b = append(b, '"')
	}
	b = appendOptional(b, `,"agent_version":"`, p.AgentVersion)
	b = appendOptional(b, `,"traceparent":"`, p.TraceParent)
	b = appendOptional(b, `,"tracestate":"`, p.TraceState)
	return append(b, "}}\n"...), true
}

// appendOptional appends an omitempty string member (its name with the
// comma, colon and opening quote) unless s is empty.
func appendOptional(b []byte, member, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, member...)
	b = append(b, s...)
	return append(b, '"')
}

// DecodeResponse decodes a daemon's answer line (without its newline) to
// the request of nonce: a JSON-RPC response with that id and a result
// that is a HookResult and nothing else. An error response is an error
// that carries its message (at most 200 bytes of it).
func DecodeResponse(line []byte, nonce string) (HookResult, error) {
	if r, ok := decodeResultPlain(line, nonce); ok {
		return r, nil
	}
	return decodeResponse(line, nonce)
}

// decodeResultPlain is decodeResponse's result for the answer a daemon
// writes (EncodeResult): a JSON-RPC 2.0 response whose members are exactly
// "jsonrpc", "id" and "result", each once and named exactly so, the id the
// string nonce, decoded with encoding/json's tokens and no reflection but
// the result's; ok is false for anything else, which decodeResponse
// decodes (an error response among them). A client is a process that
// reads one answer: the SDK's decoder builds its codecs by reflection on
// first use, about 0.4M instructions of the lean client's. Whatever ok
// answers, decodeResponse answers the same (FuzzDecodeResultPlain); the
// MAC (Verify) is checked on it as on any.
func decodeResultPlain(line []byte, nonce string) (HookResult, bool) {
	if !jsonkind.Plain(nonce) {
		return HookResult{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return HookResult{}, false
	}
	var result json.RawMessage
	seen := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return HookResult{}, false
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return HookResult{}, false
		}
		bit := 0
		switch tok {
		case "jsonrpc":
			bit = 1
			if string(raw) != `"2.0"` {
				return HookResult{}, false
			}
		case "id":
			bit = 2
			if len(raw) != len(nonce)+2 || raw[0] != '"' || string(raw[1:len(raw)-1]) != nonce {
				return HookResult{}, false
			}
		case "result":
			bit = 4
			result = raw
		default:
			return HookResult{}, false
		}
		if seen&bit != 0 {
			return HookResult{}, false
		}
		seen |= bit
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || seen != 7 {
		return HookResult{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return HookResult{}, false
	}
	r, err := decodeResult(result)
	return r, err == nil
}

// decodeResult decodes a response's result: a HookResult and nothing
// else, its body within MaxAnswer.
func decodeResult(result []byte) (HookResult, error) {
	var r HookResult
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return HookResult{}, fmt.Errorf("not a hook result: %w", err)
	}
	if dec.More() {
		return HookResult{}, errors.New("not a hook result: more than one value")
	}
	if len(r.Body) > MaxAnswer {
		return HookResult{}, fmt.Errorf("an answer larger than %d bytes", MaxAnswer)
	}
	return r, nil
}

// decodeResponse is DecodeResponse by the SDK's jsonrpc.
func decodeResponse(line []byte, nonce string) (HookResult, error) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return HookResult{}, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return HookResult{}, errors.New("the daemon sent a request, not a response")
	}
	if id, _ := resp.ID.Raw().(string); id != nonce {
		return HookResult{}, errors.New("a response to another request")
	}
	if resp.Error != nil {
		msg := resp.Error.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return HookResult{}, fmt.Errorf("the daemon answered an error: %s", msg)
	}
	return decodeResult(resp.Result)
}

// DecodeRequest decodes a client's request line (without its newline): a
// JSON-RPC call of MethodHook whose id is the string of its params'
// nonce. id is the request's id whenever it has one, for the error
// response.
func DecodeRequest(line []byte) (id jsonrpc.ID, p HookParams, err error) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return id, p, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return id, p, errors.New("not a call")
	}
	id = req.ID
	if req.Method != MethodHook {
		return id, p, fmt.Errorf("no method %.100q: want %q", req.Method, MethodHook)
	}
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return id, p, fmt.Errorf("params: %w", err)
	}
	if s, _ := id.Raw().(string); s != p.Nonce || len(p.Nonce) != 2*NonceBytes {
		return id, p, errors.New("the request's id is not its nonce, or the nonce is not one")
	}
	return id, p, nil
}

// EncodeResult is the response line of result r to the request id.
func EncodeResult(id jsonrpc.ID, r HookResult) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	line, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: b})
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// EncodeError is the response line of an error (a JSON-RPC error code
// and message) to the request id.
func EncodeError(id jsonrpc.ID, code int64, message string) []byte {
	line, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		// An ID and an error object always encode; never reached.
		line = []byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"internal error"}}`)
	}
	return append(line, '\n')
}

// ErrLineTooLong is ReadLine's error past its bound.
var ErrLineTooLong = errors.New("a line longer than its bound")

// ReadLine reads one line from r, at most max bytes before its newline,
// and returns it without the newline. A line cut short by the end of the
// stream is io.ErrUnexpectedEOF; a longer one, ErrLineTooLong. It reads
// past the newline no more than its buffer holds (one message per
// connection: nothing follows).
func ReadLine(r io.Reader, max int) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(max+1, 4<<10)), max+1)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF {
			return 0, nil, io.ErrUnexpectedEOF
		}
		return 0, nil, nil
	})
	if sc.Scan() {
		if len(sc.Bytes()) > max {
			return nil, ErrLineTooLong
		}
		return sc.Bytes(), nil
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, ErrLineTooLong
	case err != nil:
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}

// ServeConn answers the one request on a daemon's connection rw (the
// daemon's side of Call): it reads the request line, at most maxLine
// bytes, decodes it (DecodeRequest) and writes answer's result, or an
// error response: jsonrpc's parse, request or params error for a request
// it cannot take, answer's *jsonrpc.Error, or an internal error. The
// caller bounds the connection's reads and writes with deadlines. Its
// error is the reason nothing was answered, or the write's.
func ServeConn(rw io.ReadWriter, maxLine int, answer func(HookParams) (HookResult, error)) error {
	return ServeConnID(rw, maxLine, func(_ jsonrpc.ID, p HookParams) (HookResult, error) { return answer(p) })
}

// ServeConnID is ServeConn whose answer is also given the request's id:
// what a daemon needs to answer the request itself, with an error, when
// answer does not return in time.
func ServeConnID(rw io.ReadWriter, maxLine int, answer func(jsonrpc.ID, HookParams) (HookResult, error)) error {
	line, err := ReadLine(rw, maxLine)
	if err != nil {
		if errors.Is(err, ErrLineTooLong) {
			_, _ = rw.Write(EncodeError(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("a request longer than %d bytes", maxLine)))
		}
		return err
	}
	id, p, err := DecodeRequest(line)
	if err != nil {
		code := int64(jsonrpc.CodeInvalidParams)
		if !id.IsValid() {
			code = jsonrpc.CodeParseError
		}
		_, werr := rw.Write(EncodeError(id, code, err.Error()))
		return werr
	}
	var out []byte
	res, err := answer(id, p)
	if err == nil {
		out, err = EncodeResult(id, res)
	}
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		out = EncodeError(id, we.Code, we.Message)
	}
	_, err = rw.Write(out)
	return err
}
