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
