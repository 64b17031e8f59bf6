"""ferret.bench(): benchmark a model from Python with the command line's rules and statistics."""
import json
import resource
import sys
import time

from . import _ferret
from ._api import _finite

BenchError = _ferret.BenchError


class BenchResult(dict):
    """The ferret.bench/1 document (as `ferret bench --json` prints it) as a dict, with .text,
    .markdown and .notes; .samples are the timed calls in seconds."""

    def __init__(self, rendered, samples):
        super().__init__(json.loads(rendered["json"]))
        self.text = rendered["text"]
        self.markdown = rendered["markdown"]
        self.notes = list(rendered["notes"])
        self.samples = list(samples)

    def _repr_markdown_(self):
        return self.markdown


def _tensors(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif hasattr(value, "device") and hasattr(value, "shape"):
        yield value


def bench(model, example_inputs=(), warmup="auto", runs=None, time_seconds=None, batch_size=None, record=False,
          label=None, db=None, grad=False, quiet=False):
    """Time `model(*example_inputs)` as `ferret bench` times a TorchScript file.

    warmup: "auto" (until the latency is steady, as the command line decides) or a count;
    runs: timed calls, or time_seconds: run for that long (default 3 s, 10 to 20000 calls);
    batch_size: items per call for the throughput (default: the first input's first dimension).
    The device is synchronised after every call when the inputs are on a GPU. grad=False runs
    under torch.no_grad(). record=True stores the run with all its samples in the same SQLite
    store as `ferret bench --record` (db, default .ferret/history.db), under `label`, so that
    `ferret compare` and `ferret history` see it. Returns a BenchResult; prints its report unless
    quiet."""
    import torch

    if record and not label:
        raise BenchError("record=True needs label=NAME (the name runs are compared under)")
    if not record and (label or db):
        raise BenchError("label and db need record=True")
    inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    tensors = list(_tensors(inputs))
    device = str(tensors[0].device) if tensors else "cpu"
    if device == "cpu":
        for p in getattr(model, "parameters", lambda: [])():
            device = str(p.device)
            break
    cuda = device.startswith("cuda")
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    if batch_size is None:
        batch_size = float(tensors[0].shape[0]) if tensors and len(tensors[0].shape) > 0 else 1.0
    batch_size = _finite("batch_size", batch_size, 1e-9, 1e15)
    time_seconds = 0.0 if time_seconds is None else _finite("time_seconds", time_seconds, 1e-6, 1e7)
    plan = _ferret.BenchPlan(warmup=str(warmup), runs=int(runs or 0), time_seconds=time_seconds)

    def call():
        start = time.perf_counter()
        model(*inputs)
        synchronize()
        return time.perf_counter() - start

    context = torch.enable_grad() if grad else torch.no_grad()
    samples = []
    with context:
        synchronize()
        while not plan.warmup_add(call()):
            pass
        timed_start = time.perf_counter()
        while True:
            samples.append(call())
            if plan.timed_done(len(samples), time.perf_counter() - timed_start):
                break
        timed_seconds = time.perf_counter() - timed_start

    subject = getattr(model, "__qualname__", None) or type(model).__qualname__
    settings = [("device", device), ("threads", str(torch.get_num_threads())), ("grad", str(bool(grad)).lower()),
                ("inputs", ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in tensors)),
                ("runner", "python")]
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    rendered = _ferret.bench_report(plan, samples, timed_seconds, float(batch_size), subject, device,
                                    "host perf_counter" + (" + cuda synchronize" if cuda else ""),
                                    torch.__version__, torch.get_num_threads(), settings, peak_rss,
                                    label or "", db or "")
    result = BenchResult(rendered, samples)
    if not quiet:
        sys.stdout.write(result.text)
    return result
