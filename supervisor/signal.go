package supervisor

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InterruptContext returns a context that is cancelled, with an
// *Interrupted cause, when the process receives SIGINT, SIGTERM or SIGHUP
// (a closed terminal or SSH session: the run still ends in a transcript
// that says why). Run then kills the subject, records run.failed naming
// the signal, and returns. Call stop to restore the default signal
// behaviour.
func InterruptContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case s := <-ch:
			// "INT", "TERM", "HUP": the name without SIG, as exits name signals.
			cancel(&Interrupted{Signal: strings.TrimPrefix(unix.SignalName(s.(syscall.Signal)), "SIG")})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		<-finished
		cancel(context.Canceled)
	}
}
