package quiesce

// This file classifies a thread's wait: which system call it is blocked
// in, whether that call waits on the terminal (directly, through poll,
// select or epoll), and with what timeout.

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pollRdNorm is POLLRDNORM (asm-generic/poll.h), which x/sys lacks.
const pollRdNorm = 0x40

// Bounds on what is read from a task's memory.
const (
	maxPollFDs  = 4096
	maxSelectFD = 1 << 16
)

// devNum is a device number as major and minor.
type devNum struct{ major, minor uint32 }

func devOf(rdev uint64) devNum { return devNum{unix.Major(rdev), unix.Minor(rdev)} }

// devTTY is /dev/tty, the controlling terminal's alias.
var devTTY = devNum{5, 0}

// fileID is a file's identity: its inode number and the device of its
// filesystem (stat's st_ino and st_dev).
type fileID struct {
	ino uint64
	dev devNum
}

// ttyFiles is what one process has open that is the terminal: the
// descriptor numbers, and the identities of the files behind them.
type ttyFiles struct {
	fds map[int]bool
	ids map[fileID]bool
}

// parseSyscall reads /proc/<tid>/syscall: "running", "-1 sp pc" (blocked
// outside a call), or the number and six arguments (then sp and pc).
func parseSyscall(s string) (call []uint64, running bool) {
	s = strings.TrimSpace(s)
	if s == "running" {
		return nil, true
	}
	f := strings.Fields(s)
	if len(f) < 7 || f[0] == "-1" {
		return nil, false
	}
	call = make([]uint64, 7)
	for i := range 7 {
		base := 16 // the arguments are 0x-prefixed hex, the number decimal
		if i == 0 {
			base = 10
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(f[i], "0x"), base, 64)
		if err != nil {
			return nil, false
		}
		call[i] = v
	}
	return call, false
}

// wait is a task blocked on the terminal.
type wait struct {
	tid     int
	nr      uint64
	call    string
	timeout time.Duration // < 0: none
	ran     [2]uint64
}

// waitKind is how a call's arguments name descriptors and a timeout.
type waitKind int

const (
	waitRead waitKind = iota + 1
	waitPoll
	waitPpoll
	waitSelect
	waitPselect
	waitEpoll
	waitEpoll2
)

var waitNames = map[waitKind]string{
	waitRead: "read", waitPoll: "poll", waitPpoll: "ppoll", waitSelect: "select",
	waitPselect: "pselect6", waitEpoll: "epoll_wait", waitEpoll2: "epoll_pwait2",
}

// waiter finds a task of the foreground group fg blocked on the
// terminal for input, reading the call of each of the group's threads
// (its processes' main threads first, where programs usually read) until
// one is; running is a thread whose call could not be read because it
// is running.
func (j *Judge) waiter(tasks []task, fg int) (w *wait, running int) {
	var cands []task
	for _, t := range tasks {
		if t.pgrp == fg {
			cands = append(cands, t)
		}
	}
	slices.SortStableFunc(cands, func(a, b task) int {
		return boolInt(a.tid != a.pid) - boolInt(b.tid != b.pid)
	})
	for _, t := range cands {
		call, isRunning, ok := j.readSyscall(t)
		if isRunning {
			return nil, t.tid
		}
		if !ok || call == nil {
			continue
		}
		kind, ok := waitCalls[call[0]]
		if !ok {
			continue
		}
		timeout, onTTY := j.waitsOnTTY(t, call, kind)
		if onTTY {
			return &wait{tid: t.tid, nr: call[0], call: waitNames[kind], timeout: timeout, ran: t.ran}, 0
		}
	}
	return nil, 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readSyscall reads the thread's /proc/<tid>/syscall (ok false when it
// cannot: gone, or no ptrace access).
func (j *Judge) readSyscall(t task) (call []uint64, running, ok bool) {
	fd := -1
	b, ok, err := j.readProcFile(&t, "syscall", &fd, false)
	if err != nil || !ok {
		return nil, false, false
	}
	call, running = parseSyscall(string(b))
	return call, running, true
}

// waitsOnTTY reports whether t's call waits for input from the terminal,
// and its timeout (< 0: none). Anything unreadable counts as "no".
func (j *Judge) waitsOnTTY(t task, call []uint64, kind waitKind) (time.Duration, bool) {
	a := call[1:]
	switch kind {
	case waitRead:
		return j.readTimeout(), j.isTTY(t, int(int32(a[0])))
	case waitPoll, waitPpoll:
		n := min(a[1], maxPollFDs)
		buf, err := readMem(t.pid, a[0], int(n)*8)
		if err != nil {
			return 0, false
		}
		found := false
		for i := 0; i+8 <= len(buf); i += 8 {
			fd := int32(binary.LittleEndian.Uint32(buf[i:]))
			events := binary.LittleEndian.Uint16(buf[i+4:])
			if fd >= 0 && events&(unix.POLLIN|pollRdNorm) != 0 && j.isTTY(t, int(fd)) {
				found = true
				break
			}
		}
		if kind == waitPoll {
			return msTimeout(a[2]), found
		}
		return timespecTimeout(t.pid, a[2]), found
	case waitSelect, waitPselect:
		// No terminal descriptor above the highest one this process has:
		// read only the bytes of the set that can hold one.
		nfds := min(a[0], maxSelectFD, uint64(maxFD(j.ttySet(t))+1))
		if a[1] == 0 || nfds == 0 {
			return 0, false
		}
		set, err := readMem(t.pid, a[1], int((nfds+7)/8))
		if err != nil {
			return 0, false
		}
		found := false
		// Only the terminal's own descriptors matter: look at their bits.
		for fd := range j.ttySet(t) {
			if fd < int(nfds) && set[fd/8]&(1<<(fd%8)) != 0 {
				found = true
				break
			}
		}
		if kind == waitSelect {
			return timevalTimeout(t.pid, a[4]), found
		}
		return timespecTimeout(t.pid, a[4]), found
	case waitEpoll, waitEpoll2:
		found := j.epollWatchesTTY(t, int(int32(a[0])))
		if kind == waitEpoll {
			return msTimeout(a[3]), found
		}
		return timespecTimeout(t.pid, a[3]), found
	}
	return 0, false
}

// readTimeout is a read's timeout on the terminal: none in canonical
// mode or with VMIN > 0; VTIME tenths of a second with VMIN 0.
func (j *Judge) readTimeout() time.Duration {
	tio, err := unix.IoctlGetTermios(j.slave, unix.TCGETS)
	if err != nil || tio.Lflag&unix.ICANON != 0 || tio.Cc[unix.VMIN] > 0 || tio.Cc[unix.VTIME] == 0 {
		return -1
	}
	return time.Duration(tio.Cc[unix.VTIME]) * 100 * time.Millisecond
}

// isTTY reports whether descriptor fd of t is the terminal: the slave
// itself, or /dev/tty while the slave is t's controlling terminal.
func (j *Judge) isTTY(t task, fd int) bool {
	return fd >= 0 && j.ttySet(t)[fd]
}

// ttySet lists t's process's descriptors that are the terminal.
func (j *Judge) ttySet(t task) map[int]bool { return j.ttyFiles(t).fds }

// ttyFiles lists t's process's descriptors that are the terminal, and
// their files' identities, once per evaluation (the cache ttyFDs): each
// entry of /proc/<pid>/fd is looked at once, however many bits a select
// set or a pollfd array names.
func (j *Judge) ttyFiles(t task) *ttyFiles {
	if tf, ok := j.ttyFDs[t.pid]; ok {
		return tf
	}
	tf := &ttyFiles{fds: map[int]bool{}, ids: map[fileID]bool{}}
	if j.ttyFDs != nil {
		j.ttyFDs[t.pid] = tf
	}
	dir := fmt.Sprintf("/proc/%d/fd", t.pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return tf
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(dir+"/"+e.Name(), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if j.isTerminalNode(t, devOf(st.Rdev)) {
			tf.fds[fd] = true
			tf.ids[fileID{st.Ino, devOf(st.Dev)}] = true
		}
	}
	return tf
}

// isTerminalNode: a character device numbered rdev is the terminal for t
// (the slave, or /dev/tty while the slave is t's controlling terminal).
func (j *Judge) isTerminalNode(t task, rdev devNum) bool {
	return rdev == j.slaveDev || (rdev == devTTY && t.tty == j.slaveDev)
}

// isTTYFile reports whether the file with identity id is the terminal
// for t: the slave's own inode; a file t's process has open as the
// terminal (a /dev/tty, or the slave through another node); or the
// /dev/tty of t's root while the slave is t's controlling terminal (a
// /dev/tty open only elsewhere, say in a parent that registered it).
func (j *Judge) isTTYFile(t task, id fileID) bool {
	if id == j.slaveID || j.ttyFiles(t).ids[id] {
		return true
	}
	var st unix.Stat_t
	if t.tty != j.slaveDev || unix.Stat(fmt.Sprintf("/proc/%d/root/dev/tty", t.pid), &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && devOf(st.Rdev) == devTTY && id == fileID{st.Ino, devOf(st.Dev)}
}

// maxFD is the highest descriptor in set, -1 for none.
func maxFD(set map[int]bool) int {
	m := -1
	for fd := range set {
		m = max(m, fd)
	}
	return m
}

// epollWatchesTTY reads the epoll instance's fdinfo: a line per watched
// file,
//
//	tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x
//
// (fs/eventpoll.c) with the descriptor number it was registered by, its
// event mask, and the file's inode and filesystem device. The number is
// only what it was at registration: after a dup2 over it, or a close and
// reuse, it names another file, while the registration stays as long as
// the file it was made for is open anywhere. So the file is matched by
// identity, ino and sdev, against the slave's and the terminal files the
// process has open. A kernel that does not print ino and sdev gets the
// old match by number, exact only while the number was not reused.
func (j *Judge) epollWatchesTTY(t task, epfd int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", t.pid, epfd))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		w, ok := parseEpollLine(line)
		if !ok || w.events&unix.EPOLLIN == 0 {
			continue
		}
		if w.hasID {
			if j.isTTYFile(t, w.id) {
				return true
			}
		} else if j.isTTY(t, w.fd) {
			return true
		}
	}
	return false
}

// epollItem is one watched file of an epoll instance's fdinfo.
type epollItem struct {
	fd     int
	events uint64
	id     fileID
	hasID  bool // ino: and sdev: were present
}

// parseEpollLine parses one "tfd:" line of an epoll instance's fdinfo;
// ok false for any other line.
func parseEpollLine(line string) (it epollItem, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
		return it, false
	}
	fd, err1 := strconv.Atoi(f[1])
	ev, err2 := strconv.ParseUint(f[3], 16, 32)
	if err1 != nil || err2 != nil {
		return it, false
	}
	it.fd, it.events = fd, ev
	var ino, sdev uint64
	var hasIno, hasDev bool
	for _, w := range f[4:] {
		if v, ok := strings.CutPrefix(w, "ino:"); ok {
			ino, err1 = strconv.ParseUint(v, 16, 64)
			hasIno = err1 == nil
		} else if v, ok := strings.CutPrefix(w, "sdev:"); ok {
			sdev, err2 = strconv.ParseUint(v, 16, 32)
			hasDev = err2 == nil
		}
	}
	if hasIno && hasDev {
		// sdev is the kernel's internal dev_t: major in the top 12 bits,
		// minor in the low 20.
		it.id = fileID{ino, devNum{uint32(sdev >> 20), uint32(sdev & 0xfffff)}}
		it.hasID = true
	}
	return it, true
}

// msTimeout is a millisecond timeout argument (an int: negative is none).
func msTimeout(arg uint64) time.Duration {
	ms := int32(uint32(arg))
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// timespecTimeout reads a struct timespec argument (NULL: none).
func timespecTimeout(pid int, addr uint64) time.Duration {
	return pairTimeout(pid, addr, time.Nanosecond)
}

// timevalTimeout reads a struct timeval argument (NULL: none).
func timevalTimeout(pid int, addr uint64) time.Duration {
	return pairTimeout(pid, addr, time.Microsecond)
}

// pairTimeout reads {seconds, fraction} of two 64-bit words; unreadable
// counts as none (the deadline is the backstop).
func pairTimeout(pid int, addr uint64, unit time.Duration) time.Duration {
	if addr == 0 {
		return -1
	}
	b, err := readMem(pid, addr, 16)
	if err != nil {
		return -1
	}
	sec := int64(binary.LittleEndian.Uint64(b))
	frac := int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || frac < 0 || sec > int64(time.Hour/time.Second) {
		return -1
	}
	return time.Duration(sec)*time.Second + time.Duration(frac)*unit
}

// readMem reads n bytes at addr of pid's memory.
func readMem(pid int, addr uint64, n int) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil, err
	}
	return buf, nil
}
