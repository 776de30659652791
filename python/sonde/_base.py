"""What every collector shares, importing nothing: `sonde collect python` loads
the CPU collector before the program's first line, and a module sonde loads is
one the program's own `import` then finds loaded (its cost and its side effects
missing from the profile)."""


class SondeWarning(UserWarning):
    """Something sonde did not do as asked, said once instead of silently."""


class StartStop:
    """`with x:` is x.start() ... x.stop() (what every collector and tracker shares)."""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class _Then:
    """A module's loader that calls fn(module) once the module has run, and
    takes its finder (watch) out of sys.meta_path."""

    def __init__(self, loader, watch):
        self.loader, self.watch = loader, watch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        forget_import(self.watch)
        # the module keeps its own loader (source lines in tracebacks, reload)
        module.__spec__.loader = module.__loader__ = self.loader
        self.loader.exec_module(module)
        try:
            self.watch.fn(module)
        except Exception:  # the program's import never fails for sonde
            pass


class _AfterImport:
    """A finder that lets the others find one module, and has fn(module)
    called once it has loaded. It leaves sys.meta_path when the module loads,
    not when it is found: importlib.util.find_spec finds without loading."""

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        import sys  # built in: loaded before anything

        for finder in list(sys.meta_path):
            find = None if finder is self else getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Then(spec.loader, self)
                return spec
        return None


def after_import(name, fn):
    """fn(module) once the program imports module name (not loaded yet); the
    finder, for forget_import."""
    import sys

    watch = _AfterImport(name, fn)
    sys.meta_path.insert(0, watch)
    return watch


def forget_import(watch):
    """watch (after_import's) no longer waits."""
    import sys

    try:
        sys.meta_path.remove(watch)
    except ValueError:
        pass
