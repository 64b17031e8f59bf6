"""What the Python tests share: the built CLI, the source tree, temporary folders, CLI runs.

CTest sets FERRET_BINARY (the built `ferret`), FERRET_SOURCE_DIR and PYTHONPATH (the built
package, BUILD/python)."""
import os
import subprocess
import tempfile
import unittest

FERRET = os.environ.get("FERRET_BINARY", "ferret")
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
