"""A curses program for the PTY acceptance test (supervisor/pty_accept_test.go).

It draws boxes with line-drawing characters in colours, hides the cursor,
turns on keypad mode (so the terminal sends cursor keys in application
mode) and moves an @ inside the big box with the arrow keys; q quits with
exit code 0. Everything it draws depends only on the keys it reads.
"""

import curses


def draw(scr, y, x, last):
    h, w = scr.getmaxyx()
    scr.erase()
    scr.addstr(0, 0, " boxes: arrows move @, q quits ".ljust(w - 1), curses.color_pair(2))
    box = scr.derwin(h - 4, w - 16, 2, 0)
    box.box()
    box.addstr(0, 2, " field ", curses.color_pair(1) | curses.A_BOLD)
    side = scr.derwin(5, 14, 2, w - 15)
    side.attron(curses.color_pair(3))
    side.border()
    side.attroff(curses.color_pair(3))
    side.addstr(1, 1, "row %2d" % y)
    side.addstr(2, 1, "col %2d" % x)
    side.hline(3, 1, curses.ACS_HLINE, 12)
    side.addch(3, 0, curses.ACS_LTEE)
    side.addch(3, 13, curses.ACS_RTEE)
    box.addstr(y, x, "@", curses.color_pair(1) | curses.A_BOLD)
    scr.addstr(h - 1, 0, "last key: %s" % last)
    scr.refresh()


def main(scr):
    curses.curs_set(0)
    curses.start_color()
    curses.use_default_colors()
    curses.init_pair(1, curses.COLOR_RED, -1)
    curses.init_pair(2, curses.COLOR_BLACK, curses.COLOR_CYAN)
    curses.init_pair(3, curses.COLOR_GREEN, -1)
    scr.keypad(True)
    h, w = scr.getmaxyx()
    rows, cols = h - 6, w - 18  # the inside of the big box
    y, x, last = 1, 1, "none"
    moves = {
        curses.KEY_UP: (-1, 0, "KEY_UP"),
        curses.KEY_DOWN: (1, 0, "KEY_DOWN"),
        curses.KEY_LEFT: (0, -1, "KEY_LEFT"),
        curses.KEY_RIGHT: (0, 1, "KEY_RIGHT"),
    }
    while True:
        draw(scr, y, x, last)
        k = scr.getch()
        if k == ord("q"):
            return
        if k in moves:
            dy, dx, last = moves[k]
            y = min(max(1, y + dy), rows)
            x = min(max(1, x + dx), cols)
        else:
            last = repr(k)


curses.wrapper(main)
