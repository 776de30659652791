#!/usr/bin/python3
"""terminal.py SCENARIO: drive `sonde collect` from an interactive bash on a
pseudo-terminal, as a user at a terminal would, and exit 0 when the scenario
went as it goes without sonde. What the terminal showed goes to stderr.

Scenarios:
  modes     the target sets the terminal's modes (stty sane): it runs, exit 0
  read      the target reads a line typed at the terminal
  stop      Ctrl-Z stops the job (the shell says so), fg resumes it, the
            target reads on and the run ends with exit 0
  interrupt Ctrl-C ends the run: sonde says it was interrupted, exit 130
  background started with &, the target reads the terminal: the job stops
            (tty input), fg gives it the terminal, it reads on, exit 0
"""
import os
import pty
import re
import select
import sys
import time

SONDE = os.environ["SONDE"]
COLLECT = f"{SONDE} collect memory -q -o"


class Term:
    def __init__(self):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["PS1"] = "$ "
            os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
        self.seen = b""
        self.mark = 0

    def read(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    return
                if not data:
                    return
                self.seen += data

    def expect(self, pattern, seconds=20):
        """Wait for PATTERN after what the last expect matched."""
        rx = re.compile(pattern.encode(), re.S)
        end = time.monotonic() + seconds
        while True:
            m = rx.search(self.seen, self.mark)
            if m:
                self.mark = m.end()
                return m
            if time.monotonic() >= end:
                raise AssertionError(f"no {pattern!r} within {seconds} s")
            self.read(0.1)

    def send(self, text):
        os.write(self.fd, text.encode())

    def line(self, text):
        self.send(text + "\n")

    def status(self):
        """The last command's exit status, as the shell saw it."""
        self.line('echo "rc=$?."')
        return int(self.expect(r"rc=(\d+)\.").group(1))

    def close(self):
        try:
            self.line("exit")
            self.read(0.5)
            os.close(self.fd)
        except OSError:
            pass
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def modes(t):
    t.line(f"{COLLECT} modes.json -- stty sane")
    assert t.status() == 0, "stty sane under sonde did not exit 0"


def read(t):
    t.line(f"{COLLECT} read.json -- sed -n 's/^/got /p;q'")
    t.read(0.5)
    t.line("bob")
    t.expect("got bob")
    assert t.status() == 0


def stop(t):
    t.line(f"{COLLECT} stop.json -- cat")
    t.read(0.5)
    t.line("one")
    t.expect("one.*one")
    t.send("\x1a")
    t.expect("Stopped")
    t.line("fg")
    t.read(0.5)
    t.line("two")
    t.expect("two.*two")
    t.send("\x04")
    assert t.status() == 0


def interrupt(t):
    t.line(f"{COLLECT} int.json -- cat")
    t.read(0.5)
    t.line("ping")
    t.expect("ping.*ping", 20)  # cat runs: the terminal is its group's
    t.send("\x03")
    t.expect("interrupted by Interrupt")
    assert t.status() == 130


def background(t):
    t.line(f"{COLLECT} bg.json -- cat &")
    deadline = time.monotonic() + 20
    while True:
        t.line("jobs")
        try:
            t.expect(r"Stopped.*cat", 1)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    t.line("fg")
    t.read(0.5)
    t.line("three")
    t.expect("three.*three")
    t.send("\x04")
    assert t.status() == 0


def main():
    scenario = globals()[sys.argv[1]]
    t = Term()
    ok = True
    try:
        t.expect(r"\$ ")
        scenario(t)
    except AssertionError as e:
        print(f"terminal.py: {sys.argv[1]}: {e}", file=sys.stderr)
        ok = False
    finally:
        t.close()
        sys.stderr.write(t.seen.decode(errors="replace") + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
