"""Run a Python program under the CPU collector, as cProfile's command line does.

    python3 -m sonde.run [-o calls.json] [--no-c-calls] [--buffer BYTES]
                         [--mode calls|sampling] [--hz HZ] [--wall]
                         [--memory | --numa] [--memory-interval BYTES]
                         (SCRIPT | -m MODULE | -c COMMAND | -) [ARGS...]

The program sees the sys.argv, sys.path[0] and __main__ it would see when run
as `python3 SCRIPT ARGS`. Recording stops when the interpreter exits (after
the program's threads were joined and its own atexit handlers ran), and the
trace profile is written: `sonde show calls.json report|graph|flamegraph`.

`sonde collect python -- python3 SCRIPT ARGS` runs this module with
--to-sonde: the events go into sonde's rings as they happen (what a crash
leaves is kept), and sonde writes the profile.
"""

import atexit
import os
import sys

from . import _sonde
from .cpu import CpuCollector

RING_ENV, TSC_ENV = "SONDE_PYTHON_RING", "SONDE_PYTHON_TSC"  # proto/python.h

# The runner's own options. They are parsed by hand, and argparse (with what it
# imports: re, gettext, ...) is loaded only for --help and for what this does
# not take: a module loaded before the program is one its import finds done.
_FLAGS = ("to_sonde", "no_c_calls", "syscalls", "wall", "memory", "numa")
_VALUES = {"output": str, "cmd": str, "mode": str, "hz": float, "memory_interval": int,
           "buffer": int, "module": str, "command": str}
_DEFAULTS = dict(output="sonde-python.json", cmd=None, mode="calls", hz=100.0,
                 memory_interval=256 * 1024, buffer=None, module=None, command=None)


class _Options:
    pass


def _parse_fast(own):
    """own parsed as argparse would, or None for argparse to do it (and say why)."""
    o = _Options()
    o.__dict__.update(_DEFAULTS, **{f: False for f in _FLAGS})
    i = 0
    while i < len(own):
        a, value = own[i], None
        if a.startswith("--") and "=" in a:
            a, value = a.split("=", 1)
        key = {"-o": "output", "-m": "module", "-c": "command"}.get(a, a[2:].replace("-", "_"))
        if not a.startswith("-") or a in ("-h", "--help"):
            return None
        if key in _FLAGS and a.startswith("--") and value is None:
            setattr(o, key, True)
        elif key in _VALUES:
            if value is None:
                i += 1
                if i >= len(own):
                    return None
                value = own[i]
            try:
                setattr(o, key, _VALUES[key](value))
            except ValueError:
                return None
        else:
            return None
        i += 1
    return o if o.mode in ("calls", "sampling") else None


def _parser():
    import argparse

    ap = argparse.ArgumentParser(
        prog="python3 -m sonde.run",
        description="Record every Python call and return of a program (sonde's CPU collector).",
        epilog="The program's own arguments follow its script, module or command.")
    ap.add_argument("-o", "--output", metavar="FILE", default="sonde-python.json",
                    help="the profile to write (default: sonde-python.json; .gz/.zst compress)")
    ap.add_argument("--to-sonde", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cmd", help=argparse.SUPPRESS)
    ap.add_argument("--no-c-calls", action="store_true",
                    help="record Python functions only, not calls into C functions")
    ap.add_argument("--syscalls", action="store_true",
                    help="also every system call, nested in the function that made it "
                         "(perf_event: root, or kernel.perf_event_paranoid -1)")
    ap.add_argument("--mode", choices=("calls", "sampling"), default="calls",
                    help="calls: every call and return (default); sampling: every thread's "
                         "Python stack HZ times a second")
    ap.add_argument("--hz", type=float, default=100,
                    help="sampling: samples per second (1 to 10000; default 100)")
    ap.add_argument("--wall", action="store_true",
                    help="sampling: weight by wall time, and sample waiting threads too")
    ap.add_argument("--memory", action="store_true",
                    help="also sample the Python allocator: estimated bytes per function")
    ap.add_argument("--numa", action="store_true",
                    help="--memory, and the NUMA node of each sampled block (libnuma)")
    ap.add_argument("--memory-interval", type=int, default=256 * 1024, metavar="BYTES",
                    help="--memory: mean bytes between samples (262144)")
    ap.add_argument("--buffer", type=int, metavar="BYTES",
                    help="ring bytes per thread (a power of two; 64 MiB by default)")
    ap.add_argument("-m", dest="module", metavar="MODULE", help="run a module as a script")
    ap.add_argument("-c", dest="command", metavar="COMMAND", help="run a command string")
    ap.add_argument("target", nargs=argparse.REMAINDER, help="SCRIPT [ARGS...] (or - for stdin)")
    return ap


def _split(argv):
    """The runner's options, and the program with its arguments."""
    own, rest, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest = argv[i + 1:]
            break
        if a in ("-m", "-c") and i + 1 < len(argv):
            own += [a, argv[i + 1]]
            rest = argv[i + 2:]
            break
        if not a.startswith("-") or a == "-":
            rest = argv[i:]
            break
        own.append(a)
        if a in ("-o", "--output", "--cmd", "--buffer", "--mode", "--hz",
                 "--memory-interval") and i + 1 < len(argv):
            own.append(argv[i + 1])
            i += 1
        i += 1
    return own, rest


def _options(argv):
    own, rest = _split(argv)
    o = _parse_fast(own) or _parser().parse_args(own)
    if o.module is None and o.command is None:
        if rest[:1] == ["-m"] and len(rest) > 1:
            o.module, rest = rest[1], rest[2:]
        elif rest[:1] == ["-c"] and len(rest) > 1:
            o.command, rest = rest[1], rest[2:]
        elif not rest:
            _parser().error("no program: give SCRIPT, -m MODULE, -c COMMAND or -")
    o.rest = rest
    return o


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    o = _options(argv)
    # the path this module was found on is not the program's
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while sys.path and sys.path[0] in ("", here):
        del sys.path[0]
    main_dict = _fresh_main()
    if o.module is not None:
        import runpy

        sys.path.insert(0, os.getcwd())
        try:
            mod_name, spec, code = runpy._get_module_details(o.module)
        except Exception as e:  # as python3 -m says it
            sys.stderr.write(f"{sys.executable}: {e}\n")
            return 1
        sys.argv = [spec.origin] + o.rest
        main_dict.update(__file__=spec.origin, __cached__=spec.cached, __loader__=spec.loader,
                         __package__=spec.parent, __spec__=spec)
        cmd = o.module
    elif o.command is not None or o.rest[0] == "-":
        sys.path.insert(0, "")
        if o.command is not None:
            sys.argv, cmd, code = ["-c"] + o.rest, "-c", compile(o.command, "<string>", "exec")
        else:
            sys.argv, cmd = ["-"] + o.rest[1:], "-"
            code = compile(sys.stdin.buffer.read(), "<stdin>", "exec")
    else:
        script = o.rest[0]
        try:
            with open(script, "rb") as f:
                source = f.read()
        except OSError as e:
            sys.stderr.write(f"{sys.executable}: can't open file {script!r}: "
                             f"[Errno {e.errno}] {e.strerror}\n")
            return 2
        sys.argv = list(o.rest)
        sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
        main_dict.update(__file__=script, __cached__=None)
        cmd = os.path.basename(script)
        code = compile(source, script, "exec")
    cmd = o.cmd or cmd
    pid = os.getpid()
    if o.to_sonde:
        # into sonde's rings (sonde records the system calls itself); stop publishes
        # what is left, from the extension (its stop and _exit are not the program's)
        col = CpuCollector(c_calls=not o.no_c_calls, mode=o.mode, hz=o.hz, wall=o.wall,
                           memory=o.memory, numa=o.numa, memory_interval=o.memory_interval,
                           _ring=os.environ.get(RING_ENV), _tsc=os.environ.get(TSC_ENV) == "1")
        atexit.register(_sonde.CpuCollector.stop, col)
        os._exit = col._exit
    else:
        try:
            col = CpuCollector(buffer=o.buffer, c_calls=not o.no_c_calls, syscalls=o.syscalls,
                               mode=o.mode, hz=o.hz, wall=o.wall, memory=o.memory, numa=o.numa,
                               memory_interval=o.memory_interval)
        except ValueError as e:
            sys.stderr.write(f"python3 -m sonde.run: {e}\n")
            return 2

        def write():
            if os.getpid() != pid or col.state != "finalized":
                return  # a forked child that exits normally: the recording is the parent's
            used = col.save_profile(o.output, cmd)  # a rank's: OUTPUT-rankR
            sys.stderr.write(f"sonde: profile written to {used}\n")

        # exit handlers run last registered first: stop (the last thing recorded, with
        # the program's threads joined and its own handlers run), then write
        atexit.register(write)
        atexit.register(col.stop)
        real_exit = os._exit

        def _exit(status):  # os._exit skips exit handlers: the recording is written first
            if os.getpid() == pid and col.state == "collecting":
                col.stop()
                write()
            real_exit(status)

        os._exit = _exit
    try:
        col.run(code, main_dict)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:
        # the traceback python3 prints, from the program's own first frame
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code is not code:
            tb = tb.tb_next
        tb = tb or e.__traceback__
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 1
    return 0


_runner_main = None


def _fresh_main():
    """A new __main__ module for the program, as the interpreter gives one (pickle
    finds its classes there); the runner's own stays referenced."""
    global _runner_main
    _runner_main = sys.modules.get("__main__")
    m = type(sys)("__main__")
    m.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = m
    return m.__dict__


if __name__ == "__main__":
    sys.exit(main())
