"""pytest for the Python binding, with a TAP summary that tests/run counts.

Run by meson (tests/meson.build) with PYTHONPATH at the build tree's package
and SONDE at the build's sonde; each test's outcome is printed as a TAP line
at the end ("ok N - name", "# SKIP reason" for skips, "not ok" for failures).
"""
import os
import sys

import pytest

_tap = []


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "alone: compares timings, so meson runs it with no other test beside it "
        "(tests/meson.build: python-alone)")
    config.addinivalue_line(
        "markers", "slow: long, or loads every CPU: in the suite `slow` only (make test-full; "
        "tests/meson.build: python-slow)")

# Under a sanitizer build, tests/run preloads the sanitizer runtimes into this
# interpreter; the programs the tests start (sonde, its targets, node) must not
# inherit that: sonde is linked with them itself, and the others are not built
# with them. Interpreters that import the (sanitized) extension get it back
# from SANITIZER_PRELOAD.
SANITIZER_PRELOAD = os.environ.pop("LD_PRELOAD", None)


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if report.when == "teardown" and report.outcome == "passed":
            return
        name = report.nodeid.split("::", 1)[-1]
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            _tap.append(f"ok - {name} # SKIP {reason}")
        elif report.failed:
            _tap.append(f"not ok - {name} ({report.when})")
        else:
            _tap.append(f"ok - {name}")


def pytest_unconfigure(config):
    out = sys.__stdout__
    for i, line in enumerate(_tap, 1):
        kind, rest = line.split(" - ", 1)
        out.write(f"{kind} {i} - {rest}\n")
    out.write(f"1..{len(_tap)}\n")
    out.flush()


@pytest.fixture
def sonde_bin():
    path = os.environ.get("SONDE")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("SONDE does not name the sonde program (run through meson test)")
    return path


def target_env():
    """The environment of sonde and of the interpreters the tests start: the build's
    package, and in a sanitized build the sanitizer runtimes the extension needs."""
    import sonde
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(sonde.__file__)))
    if SANITIZER_PRELOAD:
        env["LD_PRELOAD"] = SANITIZER_PRELOAD
    return env
