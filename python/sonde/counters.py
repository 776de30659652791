"""The counter service from Python: agents, the catalog, immutable profile
configs, counted regions and the expression language (docs/counters.md).

    cfg = sonde.counters.Config(["task-clock", "page-faults"])
    with sonde.counters.region("fill", cfg) as r:
        ...
    r.values        # {"task-clock": 1.2e6, "page-faults": 2049.0}; None: not counted
    r.not_counted   # {name: why} for each None

A counter that cannot be counted here (no PMU, say) is None with its reason,
never 0. Counted regions do not nest (the service counts one at a time).
"""

from . import _sonde

Config = _sonde.CountersConfig
region = _sonde.CountedRegion


def agents():
    """The agents (one per online CPU): id, type, name, cpu, core, package, numa, arch."""
    return _sonde.counters_agents()


def catalog(agent=0, tracepoints=False):
    """Every counter the agent has: name, description, unit, kind, supported, why..."""
    return _sonde.counters_list(agent=agent, tracepoints=tracepoints)


def groups():
    """The groups of counters (``sonde counters list --groups``):
    {name: {"description": ..., "counters": [names]}}."""
    return _sonde.counters_groups()


def group(name):
    """One group's counters, a list of names (KeyError when there is no such group here)."""
    for g, v in groups().items():
        if g.lower() == name.lower():
            return list(v["counters"])
    raise KeyError(f"no counter group {name!r} here (sonde.counters.groups() lists them)")


def info(name, agent=0):
    """One counter's info (KeyError when there is none of that name)."""
    return _sonde.counter_info(name, agent)


def eval(expression, values):
    """Evaluate an expression of counter_defs.yaml's language over values
    ({name: number or [numbers per instance]}); a list of results, None where
    a division by zero left no number."""
    return _sonde.counters_eval(expression, dict(values))
