"""The profiler `ferret run` installs in an unmodified script (through _run_shim/sitecustomize.py).

Nothing happens until the script imports torch. Then: every optimizer step ends a step; after
FERRET_RUN_WAIT steps (start-up: imports, data loading, the first iteration's allocations) the
recorder profiles FERRET_RUN_WARMUP + FERRET_RUN_STEPS steps and writes, in FERRET_RUN_DIR,
rank-<RANK>.trace.json.gz (or trace.json.gz outside torchrun) and a .ferret-run.jsonl line with
what the analysis needs: the first step to analyse, the DataLoaders the script built and the host
(the BLAS torch calls, its threads, the CPU).
Processes that never step (the torchrun launcher, DataLoader workers) write nothing.
"""
import atexit
import importlib.abc
import importlib.util
import json
import os
import signal
import sys
import threading

from . import _recorder


def _int_env(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _stop_for(signum):
    """What a signal raises in the script: KeyboardInterrupt for INT (as Python does), else
    SystemExit(128 + N), the status the default action would have given."""
    return KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)


def _exit_cleanly_on(session, *signals):
    """INT, TERM and HUP (Ctrl-C, or passed on by `ferret run`, or from a scheduler) stop Python
    wherever it is: raised inside torch's own code (its profiler's Python tracer), the profiler can
    no longer write ("Python replay stack is empty"), and TERM and HUP by default end the process
    before atexit runs at all. Where the script has not set its own handler, the first signal ends
    the script at its next optimizer step instead - a point where the profiler's state is whole -
    with KeyboardInterrupt (INT) or SystemExit(128 + N); a second one, or one when no step is to
    come, stops it at once. Either way what was recorded is written."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        if session.exit_signal is not None or not session.stepping:
            session.exit_signal = signum
            raise _stop_for(signum)
        session.exit_signal = signum

    for sig in signals:
        try:
            current = signal.getsignal(sig)
            if current == signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler):
                signal.signal(sig, handler)
        except (ValueError, OSError):
            pass


class _Session:
    def __init__(self, torch):
        self.torch = torch
        self.out_dir = os.environ["FERRET_RUN_DIR"]
        self.wait = max(0, _int_env("FERRET_RUN_WAIT", 1))
        self.warmup = max(0, _int_env("FERRET_RUN_WARMUP", 1))
        self.active = max(1, _int_env("FERRET_RUN_STEPS", 5))
        self.with_stack = os.environ.get("FERRET_RUN_STACK", "1") != "0"
        self.optimizer_steps = 0
        self.recorder = None
        self.exit_signal = None  # TERM or HUP received: the script ends at its next step
        self.stepping = True  # the optimizer hook is in place
        self.dataloaders = _recorder.DataLoaderWatch(torch)
        self.remove_hook = _recorder.on_optimizer_step(torch, self.on_step)
        atexit.register(self.at_exit)
        _exit_cleanly_on(self, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def trace_name(self):
        rank = os.environ.get("RANK")
        if rank is not None and rank.isdigit():
            return f"rank-{rank}"
        try:  # started without torchrun's environment (torch.multiprocessing.spawn, a custom launcher)
            dist = self.torch.distributed
            if dist.is_available() and dist.is_initialized():
                return f"rank-{dist.get_rank()}"
        except Exception:
            pass
        name = "trace"
        if os.path.exists(os.path.join(self.out_dir, name + ".trace.json.gz")):
            name = f"trace-pid{os.getpid()}"
        return name

    def on_step(self):
        if self.exit_signal is not None:
            raise _stop_for(self.exit_signal)
        self.optimizer_steps += 1
        if self.recorder is not None:
            self.recorder.step()
            if not self.recorder.recording:
                self.remove_hook()
                self.stepping = False
            return
        if self.optimizer_steps == max(1, self.wait):
            name = self.trace_name()
            self.recorder = _recorder.StepRecorder(
                self.torch, os.path.join(self.out_dir, name + ".trace.json.gz"), active=self.active,
                skip=self.warmup, first_step=self.optimizer_steps, with_stack=self.with_stack,
                on_written=lambda r: self.write_meta(name, r))
            self.recorder.start()

    def write_meta(self, name, recorder):
        meta = {
            "trace": os.path.basename(recorder.out_path),
            "first_step": recorder.first_analysed_step,
            "first_recorded_step": recorder.first_step,
            "last_step": recorder.last_complete_step,
            "steps_recorded": recorder.steps_done,
            "rank": int(name[5:]) if name.startswith("rank-") else -1,
            "world_size": _int_env("WORLD_SIZE", -1),
            "torch": getattr(self.torch, "__version__", "?"),
            "profiler": "kineto" if recorder.kineto else "legacy",
            "dataloaders": self.dataloaders.seen,
            "host": _recorder.host_facts(self.torch),
        }
        line = (json.dumps(meta) + "\n").encode("utf-8")
        _recorder.replace_atomically(os.path.join(self.out_dir, name + ".ferret-run.jsonl"), lambda f: f.write(line))

    def at_exit(self):
        if self.recorder is not None and self.recorder.recording:
            try:
                self.recorder.stop()
            except Exception as e:  # never turn the script's exit into a traceback
                _recorder.warn(f"could not write the trace: {e}")
        if self.exit_signal is not None:
            # Ended by a signal, whose default is to end at once: the trace is written; the
            # interpreter's teardown is skipped (torch 1.13 could hang in it after a signal).
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(128 + self.exit_signal)


class _TorchImportWatch(importlib.abc.MetaPathFinder):
    """Starts the session right after `import torch` finishes, without importing torch itself."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader_exec = spec.loader.exec_module
        watch = self

        def exec_module(module):
            loader_exec(module)
            try:
                sys.meta_path.remove(watch)
            except ValueError:
                pass
            try:
                global _session
                _session = _Session(module)
            except Exception as e:
                _recorder.warn(f"ferret run could not install its profiler: {e}")

        spec.loader.exec_module = exec_module
        return spec


_session = None


def install():
    if not os.environ.get("FERRET_RUN_DIR"):
        return
    if "torch" in sys.modules:
        global _session
        _session = _Session(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportWatch())
