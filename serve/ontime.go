package serve

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ontime keeps the deadline of a decision made on its request's own
// goroutine (Server.decide, Server.hook): the handler decides inline,
// without handing the request to another goroutine and back, and a timer
// armed for the deadline answers the request itself if the decision has
// not returned by then. Exactly one of the two answers: the handler when
// its decision returned first (settle), the timer's function otherwise
// (claim), and the handler then drops its decision, however it ended, and
// waits for the timer's answer to be written before it returns. So a
// decision that returns after its deadline is never answered, whatever it
// says, and a decision that never returns is answered at its deadline, as
// it was when decisions ran on workers.
//
// The late answer is written whole, with its Content-Length, flushed and
// with Connection: close (lateAnswer): the handler's goroutine, and with
// it the connection, stays with the decision until it returns, so the
// client must not send its next request on that connection. Over HTTP/2
// that cannot end the answer (a stream ends when its handler returns), so
// there the decisions run on workers (Server.decide, Server.hook).
//
// An ontime is reused by its owner (a pooled job) only when its timer was
// stopped before its function started (settle's reusable): a function that
// started may still read the state after the handler moved on.
type ontime struct {
	t        *time.Timer
	state    atomic.Int32 // ontimeRunning, then ontimeSettled or ontimeLate
	answered chan struct{}
}

// The states of an ontime.
const (
	ontimeRunning int32 = iota // the decision runs, nobody has answered
	ontimeSettled              // the handler answers its decision
	ontimeLate                 // the timer answers the deadline
)

// init makes o's timer, which runs fire at the deadline once armed.
func (o *ontime) init(fire func()) {
	o.answered = make(chan struct{}, 1)
	o.t = time.AfterFunc(time.Hour, fire)
	o.t.Stop()
}

// arm starts the clock for a decision due at dl.
func (o *ontime) arm(dl time.Time) {
	o.state.Store(ontimeRunning)
	o.t.Reset(time.Until(dl))
}

// settle is called by the handler when its decision returned: inTime is
// true when the handler answers it (the timer had not claimed the
// request), and reusable when o may be armed again. When inTime is false,
// the timer's answer has been written when settle returns.
func (o *ontime) settle() (inTime, reusable bool) {
	if !o.state.CompareAndSwap(ontimeRunning, ontimeSettled) {
		<-o.answered
		return false, false
	}
	return true, o.t.Stop()
}

// claim is called first by the timer's function: true when it answers the
// request (the decision has not returned), and must then call answeredLate
// once its answer is written.
func (o *ontime) claim() bool { return o.state.CompareAndSwap(ontimeRunning, ontimeLate) }

// answeredLate lets the handler return.
func (o *ontime) answeredLate() { o.answered <- struct{}{} }

// lateAnswer writes to w what answer writes, whole: its status, headers
// and body with a Content-Length and Connection: close, flushed, so that
// the client has the answer while the handler still waits for its
// decision (ontime).
func lateAnswer(w http.ResponseWriter, answer func(http.ResponseWriter)) {
	b := bufferedAnswer{header: w.Header()}
	answer(&b)
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.Header()["Content-Length"] = []string{strconv.Itoa(b.body.Len())}
	w.Header()["Connection"] = []string{"close"}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// bufferedAnswer is a ResponseWriter that keeps the status and the body
// (lateAnswer); its headers are the real writer's.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }
func (b *bufferedAnswer) WriteHeader(s int) {
	if b.status == 0 {
		b.status = s
	}
}
func (b *bufferedAnswer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}
