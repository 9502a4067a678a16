#!/usr/bin/env python3
"""A termverify.control/v1 subject written the way upstream's JSONL adapter
expects one: Python 3 standard library only, one JSON object per line on
stdout, flushed after every message.

It reads upstream's delivered environment (TERMVERIFY_SEED,
TERMVERIFY_CLOCK_INITIAL_MS, TERMVERIFY_LOCALE, TZ, TERMVERIFY_TIMEZONE,
TERMVERIFY_FS_ROOT, TERMVERIFY_NETWORK) and the terminal size from
session.hello's config, echoes text inputs into its state, records keys,
resizes and clock targets, and finishes on input.stop with run.finished
exit 0. Its state is deterministic: no wall time, pids or randomness.

It runs under /usr/bin/python3 inside a sandbox that binds /usr read-only,
so it must never import a third-party module.
"""

import json
import os
import sys

PROTOCOL = "termverify.control/v1"
DELIVERED = (
    "TERMVERIFY_SEED",
    "TERMVERIFY_CLOCK_INITIAL_MS",
    "TERMVERIFY_LOCALE",
    "TERMVERIFY_TIMEZONE",
    "TERMVERIFY_FS_ROOT",
    "TERMVERIFY_NETWORK",
    "TZ",
)


def send(kind, payload):
    # Sorted keys, no whitespace, raw UTF-8: RFC 8785 form for the values
    # this subject sends (no floats). The bytes go through the binary buffer
    # so a sandbox without locale settings cannot change the encoding, and
    # are flushed at once: the adapter reads a pipe.
    line = json.dumps(
        {"protocol": PROTOCOL, "kind": kind, "payload": payload},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def receive():
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    message = json.loads(line.decode("utf-8"))
    if message.get("protocol") != PROTOCOL:
        raise ValueError("not a %s message" % PROTOCOL)
    return message


class Subject:
    def __init__(self, hello):
        terminal = hello["config"]["terminal"]
        self.columns = terminal["columns"]
        self.rows = terminal["rows"]
        self.now_ms = hello["at_ms"]
        self.run_id = hello["run_id"]
        self.text = ""
        self.last_key = None
        self.inputs = 0
        self.env = {name: os.environ[name] for name in DELIVERED if name in os.environ}
        self.cwd = os.getcwd()

    def apply(self, kind, payload):
        self.inputs += 1
        if kind == "input.text":
            self.text += payload["text"]
        elif kind == "input.key":
            self.last_key = payload["keys"]
        elif kind == "input.resize":
            self.columns, self.rows = payload["columns"], payload["rows"]
        elif kind == "input.clock":
            self.now_ms = payload["at_ms"]

    def observation(self):
        content = ["> " + self.text, "t=%dms" % self.now_ms]
        lines = []
        for row in range(self.rows):
            line = content[row] if row < len(content) else ""
            line = "".join("?" if ord(c) < 0x20 or c == "\x7f" else c for c in line)
            lines.append(line[: self.columns].ljust(self.columns))
        return {
            "state": {
                "columns": self.columns,
                "cwd": self.cwd,
                "env": self.env,
                "inputs": self.inputs,
                "last_key": self.last_key,
                "now_ms": self.now_ms,
                "rows": self.rows,
                "run_id": self.run_id,
                "text": self.text,
            },
            "ui": {
                "regions": [
                    {"id": "screen", "role": "textbox", "column": 0, "row": 0,
                     "columns": self.columns, "rows": self.rows},
                ],
                "focus": "screen",
                "cursor": {"column": min(2 + len(self.text), self.columns - 1), "row": 0, "visible": True},
                "mode": None,
            },
            "events": [],
            "frame": {"lines": lines, "columns": self.columns, "rows": self.rows},
        }


def main():
    hello = receive()
    if hello is None or hello["kind"] != "session.hello":
        send("session.failed", {"error": {"code": "upstream-subject-bad-hello", "message": "expected session.hello"}})
        return 1
    subject = Subject(hello["payload"])
    send("session.ready", {"observation": subject.observation()})
    while True:
        message = receive()
        if message is None:
            return 0
        kind = message["kind"]
        subject.apply(kind, message["payload"])
        send("observation", subject.observation())
        if kind == "input.stop":
            send("run.finished", {"exit": {"kind": "code", "value": 0}})
            return 0


if __name__ == "__main__":
    sys.exit(main())
