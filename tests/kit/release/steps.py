"""The release tests' scratch directory and the way they report their steps (test_bundle.py,
test_new_assignment.py, and the bundle_programs_assignment<N>.py they load).

run(PREFIX, KEEP_VARIABLE, body): body(steps) with steps.work a new directory under $TMPDIR,
removed at the end (also when CTest stops the test) unless the environment variable
KEEP_VARIABLE is 1, then kept and said so. steps.fail(MESSAGE) ends the test with "FAIL: ...".
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


class Failure(Exception):
    pass


class Steps:
    def __init__(self, work):
        self.work = work
        self.start = time.monotonic()

    def step(self, message):
        """A step, with the seconds since the start."""
        print(f"[{int(time.monotonic() - self.start)}s] {message}", flush=True)

    @staticmethod
    def fail(message):
        raise Failure(message)

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def logged(self, log, *command, **kwargs):
        """Runs a command with its output in the work directory's LOG; whether it succeeded."""
        with open(self.path(log), "w") as out:
            return subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                  **kwargs).returncode == 0

    def read(self, log):
        with open(self.path(log), errors="replace") as file:
            return file.read()

    def show(self, log, lines=40):
        """The last lines of the work directory's LOG, indented."""
        for line in self.read(log).splitlines()[-lines:]:
            print(f"    | {line}")

    def indented(self, log, pattern=""):
        """LOG's lines (those that hold `pattern`, a regular expression), indented."""
        for line in self.read(log).splitlines():
            if re.search(pattern, line):
                print(f"    {line}")


def leave_outer_make():
    """The make this test runs must not join the jobserver of a make that may have started it."""
    for variable in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        os.environ.pop(variable, None)


def run(prefix, keep_variable, body):
    work = tempfile.mkdtemp(prefix=f"{prefix}.", dir=os.environ.get("TMPDIR") or "/tmp")
    keep = os.environ.get(keep_variable) == "1"
    if keep:
        print(f"(keeping {work})")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a CTest timeout still cleans up
    try:
        body(Steps(work))
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        sys.exit(1)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
