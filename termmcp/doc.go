// Package termmcp is `termverify-sandbox term mcp`: the sandboxed terminal
// daemon of package term served to an agent over the Model Context
// Protocol, through the official Go SDK's transports (stdio in the CLI).
//
// Each tool (terminal_start, terminal_attach, terminal_input,
// terminal_output, terminal_wait, terminal_status, terminal_resize,
// terminal_kill, terminal_stop, terminal_receipts) has a JSON Schema for its
// input, a structured result and a text rendering of it. A failure is a
// tool error (isError) whose message says what to do next; no call stops
// the server.
//
// A session is either a term.Daemon of this process's own (terminal_start),
// or a daemon another process started with `term start`, reached at its
// socket with package interminai's client (terminal_attach). Both answer
// the same interminai requests (backend), so every tool has one path.
// When the client goes away (the transport ends: stdin's EOF), Serve stops
// every session it started before it returns, and a process killed
// outright takes its sandboxes with it (each sandbox's liveness pipe).
// An attached daemon is its starter's, and is left running.
//
// Each session's screen is also a resource, terminal://SESSION/screen,
// which a client may subscribe to: a change of the screen sends
// notifications/resources/updated.
//
// The package never prints and never exits the process.
package termmcp
