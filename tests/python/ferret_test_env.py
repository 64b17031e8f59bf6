"""What the Python tests share: the built CLI, the source tree, temporary folders, CLI runs.

CTest sets FERRET_BINARY (the built `ferret`), FERRET_SOURCE_DIR and PYTHONPATH (the built
package, BUILD/python)."""
import os
import subprocess
import tempfile
import unittest

# CTest's python_torch2.* tests set FERRET_TORCH_MAJOR=2: a run that found another torch (or none)
# would pass while testing nothing new, so it fails here instead.
_WANTED_TORCH = os.environ.get("FERRET_TORCH_MAJOR")
if _WANTED_TORCH:
    import torch as _torch
    if _torch.__version__.split(".")[0] != _WANTED_TORCH:
        raise RuntimeError(f"torch {_torch.__version__} imported where torch {_WANTED_TORCH}.x was wanted")
    TORCH_VERSION = _torch.__version__

FERRET = os.environ.get("FERRET_BINARY", "ferret")


def recorded_format(torch_module):
    """The trace format this torch's profiler writes: Kineto JSON from torch 2, the legacy autograd
    export from Debian's torch 1.13 (built without Kineto)."""
    return "kineto" if int(torch_module.__version__.split(".")[0]) >= 2 else "legacy-autograd"


def format_family(name):
    return "kineto" if name.startswith("kineto") else name
SOURCE = os.environ.get("FERRET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(SOURCE, "examples", "traces")


def example(name):
    return os.path.join(EXAMPLES, name)


def cli(*args, check=True, env=None, cwd=None):
    """Runs the built ferret; returns the CompletedProcess (text)."""
    done = subprocess.run([FERRET, *args], capture_output=True, text=True, env=env, cwd=cwd)
    if check and done.returncode != 0:
        raise AssertionError(f"ferret {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ferret-py-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()
