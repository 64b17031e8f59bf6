"""ferret.profile(): profile a block of a PyTorch program and diagnose it in-process."""
import os
import sys
import tempfile
import time

from . import _recorder
from ._api import analyze


class Profile:
    """The context manager ferret.profile() returns.

    Inside the block, every optimizer step ends a profiler step (call p.step() yourself in a loop
    without an optimizer, e.g. inference). The first `warmup` steps are recorded but left out of
    the analysis; recording stops after `warmup + steps` steps, or at the end of the block.
    After the block: p.trace_path (the gzipped trace), p.result (the ferret.analyze() Result),
    p.dataloaders (how the DataLoaders built inside the block were set up), p.host (the machine and
    build: the BLAS torch calls, its threads, the CPU; the CPU rules read it)."""

    def __init__(self, steps=5, warmup=1, out=None, with_stack=True, record_shapes=True, profile_memory=False,
                 quiet=False, **analyze_options):
        self.steps = steps
        self.warmup = warmup
        self.out = out
        self.with_stack = with_stack
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.quiet = quiet
        self.analyze_options = analyze_options
        self.trace_path = None
        self.result = None
        self.dataloaders = []
        self.host = {}
        self._recorder = None

    def __enter__(self):
        import torch

        path = self.out
        if path is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = os.path.join(tempfile.gettempdir(), f"ferret-profile-{stamp}-{os.getpid()}.trace.json.gz")
        self._watch = _recorder.DataLoaderWatch(torch)
        self._remove_hook = _recorder.on_optimizer_step(torch, self.step)
        self._recorder = _recorder.StepRecorder(torch, os.fspath(path), active=self.steps, skip=self.warmup,
                                                with_stack=self.with_stack, record_shapes=self.record_shapes,
                                                profile_memory=self.profile_memory)
        self._recorder.start()
        return self

    def step(self):
        """Ends a step (optimizer steps do this by themselves)."""
        if self._recorder is not None:
            self._recorder.step()

    def __exit__(self, exc_type, exc, tb):
        self._remove_hook()
        self._watch.remove()
        self.dataloaders = list(self._watch.seen)
        recorder = self._recorder
        self.trace_path = recorder.stop()
        if exc_type is not None:
            return False  # the trace is kept; the user's exception goes on
        options = dict(self.analyze_options)
        if "steps" not in options and recorder.analysed_steps() is not None:
            options["steps"] = recorder.analysed_steps()
        if self.dataloaders and "dataloaders" not in options:
            options["dataloaders"] = self.dataloaders
        self.host = _recorder.host_facts(recorder.torch)
        if "host" not in options:
            options["host"] = self.host
        self.result = analyze(self.trace_path, **options)
        if not self.quiet:
            sys.stdout.write(f"ferret: {self.result.verdict or 'no finding'} (trace: {self.trace_path})\n")
        return False


def profile(steps=5, warmup=1, out=None, with_stack=True, record_shapes=True, profile_memory=False, quiet=False,
            **analyze_options):
    """Profile the block of a `with` statement and diagnose it:

        with ferret.profile(steps=5) as p:
            for x, y in loader:
                loss = loss_fn(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
        print(ferret.report(p.result))

    steps: steps analysed; warmup: steps recorded first and left out; out: the trace's path
    (default: a file in the temporary directory); with_stack / record_shapes / profile_memory:
    as torch.profiler's; quiet: do not print the headline. Other keywords go to ferret.analyze.
    Uses torch.profiler (Kineto) when torch has it, else the legacy autograd profiler."""
    return Profile(steps=steps, warmup=warmup, out=out, with_stack=with_stack, record_shapes=record_shapes,
                   profile_memory=profile_memory, quiet=quiet, **analyze_options)
