"""Prints a screenful and exits 0 without reading input, for the PTY
acceptance test (supervisor/pty_accept_test.go): its environment (but
HOME and PWD, which name the directory it runs in), then numbered lines
in colours and a box of line-drawing characters, more lines than the
terminal has, so that it scrolls. Its output depends on nothing else.
"""

import os
import sys

out = sys.stdout
for k in sorted(os.environ):
    if k not in ("HOME", "PWD"):
        out.write("%s=%s\n" % (k, os.environ[k]))
for i in range(1, 31):
    out.write("\x1b[3%dmline %02d\x1b[0m %s\n" % (i % 8, i, "ab" * i))
out.write("\u250c" + "\u2500" * 10 + "\u2510\n")
out.write("\u2502 \x1b[1mdone\x1b[0m     \u2502\n")
out.write("\x1b(0lqqqqk\x1b(B DEC graphics\n")
out.write("\u2514" + "\u2500" * 10 + "\u2518\n")
out.flush()
