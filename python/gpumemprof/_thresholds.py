"""The profiler's alert thresholds as this process's environment sets them, read by the rules the
profiler reads them with (docs/configuration.md, "Values"; settings/config_rules.cpp and
settings/value_text.cpp): a value is taken exactly as written or not at all, a value the profiler
refuses is its default here too, and a size keeps its unit (GPUMEMPROF_LEAK_BYTES=200MiB)."""

import os
import re

_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_UNITS = {"": 1, "b": 1}
for _i, _letter in enumerate("kmgt", start=1):
    for _unit in (_letter, _letter + "ib", _letter + "b"):
        _UNITS[_unit] = 1 << (10 * _i)

WARN = ("memory_warning_percent", "GPUMEMPROF_WARN_PERCENT", 80.0)
CRITICAL = ("memory_critical_percent", "GPUMEMPROF_CRITICAL_PERCENT", 95.0)
LEAK = ("memory_leak_threshold", "GPUMEMPROF_LEAK_BYTES", 100 * 1024 * 1024)
FRAGMENTATION = ("fragmentation_threshold", "GPUMEMPROF_FRAGMENTATION", 0.3)
ALL = (WARN, CRITICAL, LEAK, FRAGMENTATION)


def _number(text, high):
    """A decimal number in (0, high], or None."""
    if text is None or not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if 0 < value <= high else None


def _size(text):
    """A positive byte count with an optional unit, all powers of 1024 (1.5G); None when not one."""
    if text is None:
        return None
    number = re.match(r"[0-9.]*", text).group()
    scale = _UNITS.get(text[len(number):].lower())
    if scale is None or not _DECIMAL.fullmatch(number):
        return None
    if "." not in number:  # whole numbers exactly
        value = int(number) * scale
    else:  # a fraction as the profiler computes it, in double, and it must come to whole bytes
        value = float(number) * scale
        if value >= 2.0**64 or value != int(value):
            return None
        value = int(value)
    return value if 0 < value < 2**64 else None


def thresholds(environ=os.environ):
    """{name: value} of the four thresholds the tracker reports, as the profiler holds them."""
    def read(setting, parse):
        _, env, default = setting
        value = parse(environ.get(env))
        return default if value is None else value

    warn, critical = read(WARN, lambda t: _number(t, 100)), read(CRITICAL, lambda t: _number(t, 100))
    if critical < warn:  # the profiler replaces both by their defaults
        warn, critical = WARN[2], CRITICAL[2]
    return {WARN[0]: warn, CRITICAL[0]: critical, LEAK[0]: read(LEAK, _size),
            FRAGMENTATION[0]: read(FRAGMENTATION, lambda t: _number(t, 1))}


def variable(name):
    """The environment variable behind threshold `name`, or None."""
    return next((env for key, env, _ in ALL if key == name), None)
