# ferret run puts this folder first on PYTHONPATH: Python imports it at start-up, before the
# script, and it installs ferret's profiler (ferret/_run_session.py). It then runs the
# sitecustomize it shadows, if any (Debian ships one), so the interpreter behaves as without it.
import importlib.util
import os
import sys


def _install_ferret():
    try:
        from ferret import _run_session
        _run_session.install()
    except Exception as e:  # the script must run even when ferret cannot profile it
        sys.stderr.write(f"ferret: ferret run could not install its profiler: {e}\n")


def _chain_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_ferret_shadowed_sitecustomize", candidate)
            try:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            except Exception as e:
                sys.stderr.write(f"ferret: {candidate}: {e}\n")
            return


_install_ferret()
_chain_shadowed_sitecustomize()
