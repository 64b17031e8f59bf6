"""analyze, diff, report, load: the C++ library's answers as Python objects."""
import json
import math
import os

import numpy as np

from . import _ferret

InputError = _ferret.InputError
OptionError = _ferret.OptionError


class Error(RuntimeError):
    """ferret could not produce a result (every input failed); the message is the command line's."""


def version():
    """ferret's version, "MAJOR.MINOR.PATCH"."""
    return _ferret.version()


class Result(dict):
    """A JSON document of ferret (ferret.analysis/1, ferret.job/1 or ferret.diff/2) as a dict,
    with its other renderings kept so that report() needs no second analysis.

    Attributes: text, markdown (the reports), notes (what the command line prints on stderr),
    exit_code (the command line's exit status)."""

    def __init__(self, rendered, inputs=(), html=True):
        super().__init__(json.loads(rendered["json"]))
        self.html = html  # whether report(..., "html") draws a page of it (analyze and diff documents)
        self.json_text = rendered["json"]  # the document as the CLI prints it
        self.inputs = list(inputs)
        self.text = rendered["text"]
        self.markdown = rendered["markdown"]
        self.notes = list(rendered["notes"])
        self.exit_code = rendered["exit_code"]

    @property
    def verdict(self):
        """The one-line verdict of the first trace (or of the job), "" when there is none."""
        if "verdict" in self and isinstance(self["verdict"], dict):
            return self["verdict"].get("headline", "")
        for trace in self.get("traces", []):
            if isinstance(trace, dict) and isinstance(trace.get("verdict"), dict):
                return trace["verdict"].get("headline", "")
        return ""

    def _repr_markdown_(self):  # notebooks show the Markdown report (the text one for whatif, which has none)
        return self.markdown or "```\n" + self.text + "```\n"


def _path(p):
    """A path as str: str, bytes or os.PathLike; a NUL byte (which would cut the name short in the
    C library) is refused."""
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError(f"a path must be str, bytes or os.PathLike, not {type(p).__name__}")
    p = os.fsdecode(os.fspath(p))
    if "\x00" in p:
        raise ValueError(f"a path cannot hold a NUL byte: {p!r}")
    return p


def _paths(path_or_paths):
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        return [_path(path_or_paths)]
    paths = [_path(p) for p in path_or_paths]
    if not paths:
        raise ValueError("no trace given")
    return paths


def _finite(name, value, low, high):
    """A number argument, as the CLI checks its options: finite (NaN would switch a gate off) and in range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if not math.isfinite(v) or not low <= v <= high:
        raise ValueError(f"{name} must be a finite number from {low:g} to {high:g}, not {value!r}")
    return v


def _range(value):
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        a, b = value
        return f"{'' if a is None else a}-{'' if b is None else b}"
    return str(value)


def analyze(path_or_paths, steps=None, device=None, window=None, time=None, top=10, timeline="ferret",
            threads=0, max_memory=None, dataloaders=None, host=None, peaks=None):
    """Analyse one trace, several, or a directory of a job's rank traces.

    Returns the document `ferret analyze --json` prints, as a Result (a dict). Options as on the
    command line: steps "A-B" / "A-" / "N" or a (first, last) tuple of ProfilerStep numbers,
    device (GPU index), window "NAME" or "NAME#K", time "A-B" in ms, top (rows per table),
    timeline "ferret" or "hta", threads (parser threads, 0 = one per core), max_memory ("8GiB").
    dataloaders: a list of dicts (batch_size, num_workers, pin_memory, prefetch_factor,
    persistent_workers) describing how the script built its DataLoaders, quoted by findings.
    host: a dict of the machine and build (as ferret.profile() records it: blas_info, threads,
    cpus, cpu_flags, cpu_mhz, ...), read by the CPU rules.
    peaks: the path of a JSON file of measured device ceilings (as --peaks FILE), replacing the
    datasheet figures in the roofline.
    Raises ferret.Error when no input could be used."""
    if timeline not in ("ferret", "hta"):
        raise OptionError(f'timeline must be "ferret" or "hta", not {timeline!r}')
    rendered = _ferret.analyze(_paths(path_or_paths), top=int(top), steps=_range(steps), window=window or "",
                               time=_range(time), device=-1 if device is None else int(device),
                               hta_timeline=timeline == "hta", threads=int(threads),
                               max_memory=max_memory or "",
                               dataloaders=json.dumps(list(dataloaders)) if dataloaders else "",
                               host=json.dumps(dict(host)) if host else "", peaks=os.fspath(peaks) if peaks else "")
    if rendered["exit_code"] != 0 and not rendered["json"]:
        raise Error("; ".join(rendered["notes"]) or "no input could be analysed")
    result = Result(rendered, _paths(path_or_paths))
    traces = result.get("traces")
    if result.exit_code != 0 and isinstance(traces, list) and all("error" in t for t in traces):
        raise Error("; ".join(result.notes) or "no input could be analysed")
    return result


def diff(base, new, steps=None, device=None, top=10, fail_if_slower=None, threads=0, max_memory=None):
    """Compare two traces of the same job, as `ferret diff --json BASE NEW`.

    Returns a Result (ferret.diff/2); with fail_if_slower=PCT its exit_code is the gate's:
    0 passed, 1 NEW confirmed slower by more than PCT percent, 3 inconclusive."""
    base, new = _path(base), _path(new)
    gate = -1.0 if fail_if_slower is None else _finite("fail_if_slower", fail_if_slower, 0, 1e6)
    rendered = _ferret.diff(base, new, top=int(top), steps=_range(steps),
                            device=-1 if device is None else int(device), fail_if_slower=gate,
                            threads=int(threads), max_memory=max_memory or "")
    return Result(rendered, [base, new])


def nccl(logs, traces=(), max_bytes_without_progress=None, max_memory=None, threads=0):
    """Lint NCCL_DEBUG=INFO logs of any or all ranks, as `ferret nccl --json LOG...`.

    Returns a Result (ferret.nccl/1): versions, transports, network, GDR, init time, settings and
    warnings, with the NCCL findings. traces: Kineto traces of the same run, whose bus bandwidth
    is compared with the transport's ceiling. max_bytes_without_progress ("1GiB", "0" = no limit),
    max_memory ("8GiB") and threads as the command line's flags. Raises ferret.Error when no log
    could be read."""
    rendered = _ferret.nccl(_paths(logs), traces=_paths(traces) if traces else [],
                            max_bytes_without_progress=max_bytes_without_progress or "",
                            max_memory=max_memory or "", threads=int(threads))
    if rendered["exit_code"] != 0 and not rendered["json"]:
        raise Error("; ".join(rendered["notes"]) or "no NCCL log could be read")
    return Result(rendered, _paths(logs), html=False)


def smi(logs, traces=(), columns=None, interval=1.0, utc_offset=None, max_memory=None, threads=0):
    """GPU utilisation logs (nvidia-smi, dmon, pmon, DCGM, rocm-smi, amd-smi), as `ferret smi --json
    LOG...`.

    Returns a Result (ferret.smi/1). traces: traces of the same run, placed on the logs' clock;
    columns: the --query-gpu list of a CSV written with noheader; interval: seconds between samples
    in logs that print no time; utc_offset ("+02:00") of the clock that wrote local times;
    max_memory and threads as on the command line. Raises ferret.Error when no log could be read;
    a log without a readable sample gives exit_code 2, as the command's status."""
    rendered = _ferret.smi(_paths(logs), traces=_paths(traces) if traces else [], columns=columns or "",
                           interval=_finite("interval", interval, 0.001, 86400), utc_offset=utc_offset or "",
                           max_memory=max_memory or "", threads=int(threads))
    if rendered["exit_code"] != 0 and not rendered["json"]:
        raise Error("; ".join(rendered["notes"]) or "no GPU utilisation log could be read")
    return Result(rendered, _paths(logs), html=False)


def memory(files, max_memory=None):
    """The caching allocator's state, as `ferret memory --json FILE...`: snapshots written by
    torch.cuda.memory._dump_snapshot(), or text holding torch.cuda.memory_summary() tables and
    out-of-memory messages, each told by its content.

    Returns a Result (ferret.memory/1); a file that could not be read is a note and exit_code 2.
    Raises ferret.Error when none could be read."""
    rendered = _ferret.memory(_paths(files), max_memory=max_memory or "")
    result = Result(rendered, _paths(files), html=False)
    if result.exit_code != 0 and not result.get("snapshots") and not result.get("texts"):
        raise Error("; ".join(result.notes) or "no file could be read")
    return result


def whatif(trace, remove=(), speedup=(), fix=None, steps=None, device=None, threads=0, max_memory=None):
    """The step time predicted when a cause is fixed, as `ferret whatif --json TRACE`: each step's
    dependency graph re-timed with the change (CRITICAL_PATH.md).

    Returns a Result (ferret.whatif/1; report() renders "text" and "json"). remove: causes to
    take away ("dataloader", "host-sync", "launch-overhead", ...); speedup: "PATTERN=K" strings or
    a {pattern: K} dict (kernels and CPU ops whose name holds PATTERN run K times faster); fix: a
    finding id of ferret.analyze() whose fix is re-timed; steps and device as in analyze(). A
    window with no step to re-time gives exit_code 2."""
    if isinstance(remove, str):
        remove = [remove]
    if isinstance(speedup, dict):
        speedup = [f"{pattern}={_finite('speedup', k, 1e-9, 1e9):g}" for pattern, k in speedup.items()]
    elif isinstance(speedup, str):
        speedup = [speedup]
    rendered = _ferret.whatif(_path(trace), remove=list(remove), speedup=list(speedup), fix=fix or "",
                              steps=_range(steps), device=-1 if device is None else int(device),
                              threads=int(threads), max_memory=max_memory or "")
    return Result(rendered, [_path(trace)], html=False)


def annotate(trace, output, plain=False, steps=None, window=None, time=None, device=None, threads=0,
             max_memory=None):
    """Write the trace with ferret's diagnosis as trace events, as `ferret annotate TRACE -o OUTPUT`:
    counters, step breakdowns and findings where they happen, for Perfetto UI or chrome://tracing.
    The output is written whole or not at all, gzip when its name ends in .gz unless plain, and
    never over the trace itself. Returns what the command prints on stderr: what loading repaired,
    then a line counting the events added."""
    return _ferret.annotate(_path(trace), _path(output), plain=bool(plain), steps=_range(steps),
                            window=window or "", time=_range(time), device=-1 if device is None else int(device),
                            threads=int(threads), max_memory=max_memory or "")


def _html_title(inputs):
    title = "ferret: " + ", ".join(inputs[:4])
    return title + (", ..." if len(inputs) > 4 else "")


def report(result, format="text"):
    """A Result rendered as "text", "md" (Markdown), "html" (one self-contained page, as
    `--html` writes it) or "json". "html" and "json" also take a plain dict (a document read
    back from report.json)."""
    if format == "json":
        try:
            return json.dumps(result, indent=2) + "\n"
        except RecursionError:
            raise ValueError("the document is nested too deeply: not a ferret document") from None
    if format == "html":
        if isinstance(result, Result) and not result.html:
            raise ValueError("report(..., 'html') draws analyze and diff documents; render this one as text, md or json")
        if isinstance(result, Result):
            return _ferret.html_page(result.json_text, _html_title(result.inputs))
        if isinstance(result, dict):
            try:
                text = json.dumps(result)
            except RecursionError:
                raise ValueError("the document is nested too deeply: not a ferret document") from None
            return _ferret.html_page(text, "ferret")
        raise TypeError("report() renders a ferret document (the Result of ferret.analyze() or ferret.diff())")
    if not isinstance(result, Result):
        raise TypeError("report() renders the Result that ferret.analyze() or ferret.diff() returned")
    if format in ("md", "markdown") and not result.markdown and result.text:
        raise ValueError("this command has no Markdown report (ferret whatif): render it as text or json")
    if format == "text":
        return result.text
    if format in ("md", "markdown"):
        return result.markdown
    raise ValueError(f'format must be "text", "md", "html" or "json", not {format!r}')


class Trace:
    """A loaded trace as NumPy columns (copies of the model's blocked columns).

    events: one row per event in file order; kind (codes into kind_names), name_id and
      category_id (codes into strings and categories), ts_ns, dur_ns, pid, tid, correlation,
      external_id (-1 when absent), parent (the enclosing host span's row, -1 for none).
      names / categories_of / kinds give the decoded columns as object arrays.
    kernels: launch configuration per kernel (event = its row in events): grid_*, block_*,
      registers_per_thread, shared_memory, est_occupancy_pct, launcher (the launch call's row).
    op_args: shapes per CPU op (event, input_dims_id / input_types_id into strings).
    steps: ProfilerStep#N windows (number, start_ns, cpu_end_ns, end_ns, gpu_start_ns,
      gpu_end_ns, kernels).
    notes: what loading repaired or skipped."""

    def __init__(self, raw):
        self.source = raw["source"]
        self.events = raw["events"]
        self.kernels = raw["kernels"]
        self.op_args = raw["op_args"]
        self.steps = raw["steps"]
        self.strings = np.array(raw["strings"], dtype=object)
        self.categories = np.array(raw["categories"], dtype=object)
        self.kind_names = np.array(raw["kind_names"], dtype=object)
        self.notes = raw["notes"]
        self.base_time_ns = raw["base_time_ns"]

    def __len__(self):
        return len(self.events["kind"])

    @property
    def names(self):
        return self.strings[self.events["name_id"]]

    @property
    def categories_of(self):
        return self.categories[self.events["category_id"]]

    @property
    def kinds(self):
        return self.kind_names[self.events["kind"]]

    def kind_code(self, name):
        """The code of an event kind ("kernel", "cpu_op", ...) in events["kind"]."""
        matches = np.flatnonzero(self.kind_names == name)
        if matches.size == 0:
            raise ValueError(f"no event kind {name!r}; kinds are {list(self.kind_names)}")
        return int(matches[0])

    def __repr__(self):
        return f"<ferret.Trace {self.source!r}: {len(self)} events, {len(self.steps['number'])} steps>"


def load(path, threads=0):
    """Load a trace (Kineto JSON or legacy export; gzip, zstd or plain) into NumPy columns."""
    return Trace(_ferret.load(_path(path), threads=int(threads)))
