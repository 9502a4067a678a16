package quiesce

import "golang.org/x/sys/unix"

// waitCalls are the blocking calls rule 3 understands, by number.
var waitCalls = map[uint64]waitKind{
	unix.SYS_READ:         waitRead,
	unix.SYS_READV:        waitRead,
	unix.SYS_PREAD64:      waitRead,
	unix.SYS_POLL:         waitPoll,
	unix.SYS_PPOLL:        waitPpoll,
	unix.SYS_SELECT:       waitSelect,
	unix.SYS_PSELECT6:     waitPselect,
	unix.SYS_EPOLL_WAIT:   waitEpoll,
	unix.SYS_EPOLL_PWAIT:  waitEpoll,
	unix.SYS_EPOLL_PWAIT2: waitEpoll2,
}
