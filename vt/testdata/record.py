#!/usr/bin/env python3
"""Records what a program writes to its terminal, for vt's replay tests.

    python3 testdata/record.py NAME    (from vt/; writes testdata/NAME.bin)
    python3 testdata/record.py all

Each recording runs the program on a pseudoterminal of 80x24 with a fixed
environment, types its keys with pauses long enough for it to redraw,
reads everything it writes, and stops it (SIGKILL) after the last key: the
stream ends with the program still on screen, which is the state the
replay tests compare with tmux. The streams are kept in the repository;
this script is how they were made, not part of the tests (the programs'
output depends on their versions and the host).
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import tempfile
import termios
import time

COLS, ROWS = 80, 24
HERE = os.path.dirname(os.path.abspath(__file__))

LOREM = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
         "tempor incididunt ut labore et dolore magna aliqua").split()


def sample_text(lines):
    out = []
    for i in range(lines):
        words = [LOREM[(i * 7 + k) % len(LOREM)] for k in range(3 + i % 9)]
        line = "%03d %s" % (i + 1, " ".join(words))
        if i % 10 == 4:
            line += " \u65e5\u672c\u8a9e wide"
        if i % 10 == 7:
            line += " cafe\u0301 combining"
        if i % 13 == 6:
            line += " " + "long " * 20
        out.append(line)
    return "\n".join(out) + "\n"


CURSES_DEMO = r'''
import curses, time
def main(s):
    curses.start_color(); curses.use_default_colors()
    curses.init_pair(1, curses.COLOR_RED, -1)
    curses.init_pair(2, curses.COLOR_BLACK, curses.COLOR_CYAN)
    curses.init_pair(3, 202, 236)
    curses.curs_set(0)
    s.box()
    s.addstr(0, 3, " curses demo ", curses.A_BOLD)
    w = curses.newwin(8, 30, 2, 4); w.box(); w.addstr(1, 2, "red text", curses.color_pair(1))
    w.addstr(2, 2, "bold", curses.A_BOLD); w.addstr(3, 2, "reverse", curses.A_REVERSE)
    w.addstr(4, 2, "underline", curses.A_UNDERLINE); w.addstr(5, 2, "256 colours", curses.color_pair(3))
    w.hline(6, 1, curses.ACS_HLINE, 28)
    w2 = curses.newwin(10, 36, 3, 40); w2.border(); w2.bkgd(" ", curses.color_pair(2))
    for i in range(8):
        w2.addstr(1 + i, 2, "line %d " % i + chr(0x2500 + i), curses.color_pair(2))
    s.addch(12, 4, curses.ACS_ULCORNER); s.addch(12, 5, curses.ACS_TTEE); s.addch(12, 6, curses.ACS_URCORNER)
    s.addch(13, 4, curses.ACS_LTEE); s.addch(13, 5, curses.ACS_PLUS); s.addch(13, 6, curses.ACS_RTEE)
    s.addch(14, 4, curses.ACS_LLCORNER); s.addch(14, 5, curses.ACS_BTEE); s.addch(14, 6, curses.ACS_LRCORNER)
    s.addstr(16, 4, "diamond "); s.addch(curses.ACS_DIAMOND); s.addch(curses.ACS_CKBOARD); s.addch(curses.ACS_DEGREE)
    s.refresh(); w.refresh(); w2.refresh()
    s.keypad(True)
    y = 18
    while True:
        k = s.getch()
        if k == ord("q"):
            break
        s.addstr(y, 4, "key %s   " % curses.keyname(k).decode()); s.refresh()
        w.addstr(1, 2, "typed %d " % k, curses.color_pair(1)); w.refresh()
        y = 18 + (y - 17) % 4
curses.wrapper(main)
'''

BASH_RC = r'''
PS1='\[\e[1;32m\]user@host\[\e[0m\]:\[\e[1;34m\]\w\[\e[0m\]\$ '
cd "$(dirname "$BASH_RC_FILE")"
'''

# name: (argv, env additions, keys); a key entry is bytes to type, or a
# number of seconds to wait.
def recordings(tmp):
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write(sample_text(60))
    big = os.path.join(tmp, "big.txt")
    with open(big, "w") as f:
        f.write(sample_text(300))
    demo = os.path.join(tmp, "demo.py")
    with open(demo, "w") as f:
        f.write(CURSES_DEMO)
    fixture = os.path.join(tmp, "fixture")
    os.makedirs(os.path.join(fixture, "docs"))
    for name, mode in (("run.sh", 0o755), ("notes.md", 0o644), ("archive.tar.gz", 0o644)):
        with open(os.path.join(fixture, name), "w") as f:
            f.write("x" * 10)
        os.chmod(os.path.join(fixture, name), mode)
    os.symlink("docs", os.path.join(fixture, "link"))
    rc = os.path.join(tmp, "bashrc")
    with open(rc, "w") as f:
        f.write(BASH_RC)
    xterm = {"TERM": "xterm-256color"}
    return {
        "vim": (["vim", "-u", "NONE", "-N", "-i", "NONE", "-n", text], xterm, [
            1.0, b"5j", b"A appended\x1b", b"dd", b"o\xe6\x97\xa5\xe6\x9c\xac new line with wide\x1b",
            b":set number\r", b"/dolor\r", b"n", b"G", b"kk", b"3x", b"u", b"ggjjw", b"cwCHANGED\x1b",
            b"40G", b"zz", b":set nonumber\r", b"\x06", b"\x02", b"10G", b"yyP",
        ]),
        "less": (["less", big], dict(xterm, LESSHISTFILE="-", LESS=""), [
            1.0, b" ", b" ", b"/magna\r", b"n", b"n", b"b", b"j", b"j", b"k", b"/wide\r", b"N", b"G", b"g", b"30j",
        ]),
        "bash": (["bash", "--noprofile", "--rcfile", rc, "-i"], dict(xterm, BASH_RC_FILE=rc), [
            1.0, b"echo plain output\r", b"ls --color=always -l --time-style=+ fixture\r",
            b"printf '\\e[31mred \\e[1;32mbold green \\e[0;4munder\\e[0m \\e[38;5;208m256\\e[0m \\e[48;2;10;100;200mtrue\\e[0m\\n'\r",
            b"seq 1 30\r", b"echo \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e caf\x65\xcc\x81\r",
            b"echo " + b"x" * 100 + b" wrapped command line\r",
            b"for i in 1 2 3; do printf '\\e[7m%s\\e[0m\\t%s\\n' $i $((i*i)); done\r",
            b"echo partial", b"\x01", b"\x05", b" edited\r",
        ]),
        "curses": (["python3", demo], xterm, [1.0, b"a", b"\x1b[A", b"\x1bOB", b"x"]),
        "curses-so": (["python3", demo], {"TERM": "screen-256color", "NCURSES_NO_UTF8_ACS": "1"}, [1.0, b"b", b"\x1b[D"]),
        "top-b": (["sh", "-c", "top -b -n 1 -w 80 | head -40; sleep 5"], xterm, [2.0]),
        "top": (["top", "-d", "0.5"], xterm, [2.0, b"c", 1.0, b"1", 1.0]),
    }


def record(name, argv, env_add, keys, out_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "HOME": tempfile.gettempdir(), "COLUMNS": str(COLS), "LINES": str(ROWS)}
    env.update(env_add)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    out = bytearray()

    def drain(seconds):
        end = time.time() + seconds
        while True:
            left = end - time.time()
            if left <= 0:
                return
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return
                if not data:
                    return
                out.extend(data)

    for k in keys:
        if isinstance(k, (int, float)):
            drain(k)
        else:
            os.write(fd, k)
            drain(0.3)
    drain(0.5)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with open(out_path, "wb") as f:
        f.write(out)
    print("%s: %d bytes" % (out_path, len(out)))


def main():
    names = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        all_recs = recordings(tmp)
        if names == ["all"]:
            names = list(all_recs)
        for n in names:
            argv, env, keys = all_recs[n]
            record(n, argv, env, keys, os.path.join(HERE, n + ".bin"))


if __name__ == "__main__":
    main()
