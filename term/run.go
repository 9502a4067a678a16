package term

import (
	"context"
	"fmt"
	"path/filepath"
)

// Run is the daemon's life: it makes the socket (socket "" makes a fresh
// one, Listen), starts cfg's program, calls ready once the socket listens
// and the program has started (what `term start` prints waits for this,
// because clients race it), and serves until a STOP request or ctx's end.
// When it returns, the program's sandbox is destroyed and an
// auto-generated socket is removed. Nothing is started when the socket
// cannot be made.
func Run(ctx context.Context, cfg Config, socket string, ready func(*Socket) error) error {
	sock, err := Listen(socket)
	if err != nil {
		return err
	}
	// The program must not move, replace or remove the socket it is
	// driven through, even when it lies in a directory the program may
	// write ($TMPDIR, the working directory).
	cfg.Hide = append(cfg.Hide, filepath.Dir(sock.Path))
	d, err := Start(ctx, cfg)
	if err != nil {
		sock.Close()
		return err
	}
	if err := ready(sock); err != nil {
		sock.Close()
		d.Close()
		return fmt.Errorf("announce the socket: %w", err)
	}
	return Serve(ctx, d, sock)
}
