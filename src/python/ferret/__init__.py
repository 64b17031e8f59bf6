"""ferret for Python: the diagnosis of a PyTorch profiler trace without leaving Python.

    import ferret
    result = ferret.analyze("trace.json.gz")      # the `ferret analyze --json` document, as dicts
    print(ferret.report(result, "md"))            # or "text", "json"
    with ferret.profile() as p:                   # profile a block of a training loop
        train(steps=10)
    p.result["traces"][0]["verdict"]

The C++ library does the work (the same code as the command line); the GIL is released while it
runs. Errors are exceptions carrying the command line's messages: ferret.InputError (a ValueError)
for a trace that cannot be used, ferret.OptionError (a ValueError) for an option value.
"""
from ._api import (Error, InputError, OptionError, Result, Trace, analyze, annotate, diff, load, memory, nccl,
                   report, smi, version, whatif)
from ._bench import BenchResult, bench
from ._profile import Profile, profile

__version__ = version()
__all__ = ["Error", "InputError", "OptionError", "Result", "Trace", "BenchResult", "Profile", "analyze",
           "annotate", "bench", "diff", "load", "memory", "nccl", "profile", "report", "smi", "version", "whatif"]
