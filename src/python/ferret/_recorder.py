"""Records profiler steps in a running PyTorch program: the part of ferret.profile() and
`ferret run` that talks to torch.

One step is one optimizer step (or an explicit step() call). Steps are marked with
record_function("ProfilerStep#N"), the span torch.profiler's schedule writes, so that ferret
finds them in Kineto traces (torch 2.x) and in the legacy autograd export (torch builds without
Kineto, such as Debian's 1.13) alike.
"""
import functools
import gzip
import os
import shutil
import sys
import tempfile


def kineto_available(torch):
    try:
        return bool(torch.autograd.kineto_available())
    except Exception:  # torch before 1.8 has no Kineto at all
        return False


# CPU flags that decide what the host's matrix multiplications can reach (FMA width, bf16).
_CPU_FLAGS = ("fma", "avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def host_facts(torch):
    """The machine and build the trace does not record: the BLAS torch calls, its intra-op threads,
    the CPUs and their vector instructions. Every field is best effort; none may stop the script."""
    facts = {}
    try:
        config = torch.__config__.show()
        for key, marker in (("blas_info", "BLAS_INFO="), ("cpu_capability", "CPU capability usage: ")):
            at = config.find(marker)
            if at >= 0:
                facts[key] = config[at + len(marker):].split(",")[0].split("\n")[0].strip()
    except Exception:
        pass
    try:
        facts["threads"] = int(torch.get_num_threads())
    except Exception:
        pass
    try:
        facts["cpus"] = len(os.sched_getaffinity(0))
    except Exception:
        pass
    try:  # the BLAS libraries mapped into the process (a system libblas.so.3 names its build by folder)
        libraries = set()
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if line.count(" ") >= 5 else ""
                name = os.path.basename(path).lower()
                if ("blas" in name or "mkl" in name or "blis" in name) and not any(
                        gpu in name for gpu in ("cublas", "hipblas", "rocblas")):
                    libraries.add(os.path.realpath(path))
        facts["blas_libraries"] = sorted(libraries)
    except Exception:
        pass
    try:
        flags, mhz = set(), 0.0
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and "cpu_model" not in facts:
                    facts["cpu_model"] = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                elif key == "cpu MHz":
                    mhz = max(mhz, float(value))
        facts["cpu_flags"] = [f for f in _CPU_FLAGS if f in flags]
        if mhz > 0:
            facts["cpu_mhz"] = round(mhz)
    except Exception:
        pass
    facts.update(measure_cpu_matmul(torch))
    return facts


def measure_cpu_matmul(torch, n=512, budget_s=0.5):
    """What the BLAS torch calls does, measured: fp32 n x n matmuls at torch's threads for about
    `budget_s` seconds (after the profiler stopped, so none of it is in the trace). A reference
    BLAS runs a 512 x 512 product in ~50 ms, an optimised one in well under 1 ms."""
    import time
    try:
        a = torch.randn(n, n)
        b = torch.randn(n, n)
        torch.mm(a, b)  # warm-up: threads, first-touch pages
        calls, start = 0, time.perf_counter()
        while True:
            torch.mm(a, b)
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= budget_s or calls >= 200:
                break
        return {"matmul_gflops": round(2.0 * n * n * n * calls / elapsed / 1e9, 2), "matmul_size": n}
    except Exception:
        return {}


class StepRecorder:
    """Profiles `skip + active` steps from start(), then stops and writes a gzipped trace.

    The first `skip` steps are recorded (warm-up: CUPTI and allocator start-up costs land there)
    and left out of the analysis by the caller; `first_analysed_step` names the first step kept.
    """

    def __init__(self, torch, out_path, active=5, skip=1, first_step=0, with_stack=True,
                 record_shapes=True, profile_memory=False, on_written=None):
        self.torch = torch
        self.out_path = out_path
        self.active = max(1, int(active))
        self.skip = max(0, int(skip))
        self.first_step = int(first_step)
        self.first_analysed_step = self.first_step + self.skip
        self.with_stack = with_stack
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.on_written = on_written
        self.kineto = kineto_available(torch)
        self.profiler = None
        self.marker = None
        self.steps_done = 0
        self.written = None
        self.pid = None
        self.ended_inside_a_step = False  # stop() came between two step boundaries

    @property
    def last_complete_step(self):
        """The number of the last step that ended at a boundary (first_step - 1: none did)."""
        return self.first_step + self.steps_done - 1

    def analysed_steps(self):
        """The ProfilerStep range to analyse, "A-B", or None for every recorded step: the warm-up
        is left out, and so is a step that stop() cut short (the block or the script ended in it)."""
        if self.steps_done <= self.skip:
            return None
        return f"{self.first_analysed_step}-{self.last_complete_step}"

    @property
    def recording(self):
        return self.profiler is not None

    def start(self):
        torch = self.torch
        if self.kineto:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.profiler = torch.profiler.profile(activities=activities, record_shapes=self.record_shapes,
                                                   with_stack=self.with_stack, profile_memory=self.profile_memory)
        else:
            self.profiler = torch.autograd.profiler.profile(record_shapes=self.record_shapes,
                                                            with_stack=self.with_stack,
                                                            profile_memory=self.profile_memory)
        self.pid = os.getpid()
        self.profiler.__enter__()
        self._open_marker()

    def _open_marker(self):
        self.marker = self.torch.autograd.profiler.record_function(
            f"ProfilerStep#{self.first_step + self.steps_done}")
        self.marker.__enter__()

    def _close_marker(self):
        if self.marker is not None:
            marker, self.marker = self.marker, None
            marker.__exit__(None, None, None)

    def step(self):
        """Ends the current step; stops and writes the trace after the last one."""
        if not self.recording or os.getpid() != self.pid:
            return
        self._close_marker()
        self.steps_done += 1
        if self.steps_done >= self.skip + self.active:
            self.stop()
        else:
            self._open_marker()

    def stop(self):
        """Stops recording (a step still open is dropped by the analysis as incomplete) and
        writes the trace; returns its path, or None when nothing was recorded here."""
        if not self.recording or os.getpid() != self.pid:
            return self.written
        self.ended_inside_a_step = self.marker is not None
        self._close_marker()
        profiler, self.profiler = self.profiler, None
        if self.kineto and self.torch.cuda.is_available():
            self.torch.cuda.synchronize()
        profiler.__exit__(None, None, None)
        os.makedirs(os.path.dirname(os.path.abspath(self.out_path)), exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".json", dir=os.path.dirname(os.path.abspath(self.out_path)))
        os.close(fd)
        try:
            profiler.export_chrome_trace(tmp)

            def compress(dst_file):
                with open(tmp, "rb") as src, gzip.GzipFile(fileobj=dst_file, mode="wb", compresslevel=6) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)

            replace_atomically(self.out_path, compress)
        finally:
            os.remove(tmp)
        self.written = self.out_path
        if self.on_written is not None:
            self.on_written(self)
        return self.written


def replace_atomically(path, write):
    """Writes through write(binary_file) to a new temporary file beside `path` (O_EXCL), then
    renames it over `path`: a link planted at `path` is replaced, never written through, and the
    file appears whole or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def dataloader_settings(loader):
    """How a torch.utils.data.DataLoader was built, as ferret's findings quote it."""
    workers = getattr(loader, "num_workers", None)
    prefetch = getattr(loader, "prefetch_factor", None)
    settings = {
        "batch_size": getattr(loader, "batch_size", None),
        "num_workers": workers,
        "pin_memory": getattr(loader, "pin_memory", None),
        # torch ignores prefetch_factor without workers (and 2.x stores None then)
        "prefetch_factor": prefetch if workers else None,
        "persistent_workers": getattr(loader, "persistent_workers", None),
    }
    return {k: (v if isinstance(v, (bool, int)) or v is None else None) for k, v in settings.items()}


class DataLoaderWatch:
    """Notes the settings of every DataLoader the program builds (distinct ones, at most 16)."""

    def __init__(self, torch):
        self.seen = []
        cls = torch.utils.data.DataLoader
        original = cls.__init__
        if getattr(original, "_ferret_original", None) is not None:
            original = original._ferret_original
        watch = self

        @functools.wraps(original)
        def __init__(loader, *args, **kwargs):
            original(loader, *args, **kwargs)
            try:
                s = dataloader_settings(loader)
                if s not in watch.seen and len(watch.seen) < 16:
                    watch.seen.append(s)
            except Exception:
                pass

        __init__._ferret_original = original
        self._cls, self._original = cls, original
        cls.__init__ = __init__

    def remove(self):
        self._cls.__init__ = self._original


def on_optimizer_step(torch, callback):
    """Calls callback() after every optimizer step; returns a function that removes the hook.

    Each Optimizer class's step is wrapped: the classes that exist now (so optimizers made before
    the hook count too) and, at their first instance, classes defined later. torch wraps step in
    its own profiling wrapper ("Optimizer.step#SGD.step") at an instance's creation; ours is put
    back outside it then, so that the step boundary falls after that span has closed. (Not torch
    2.x's register_optimizer_step_post_hook: its hooks run inside that span, and a boundary there
    would cut it in two.) Nested wrappers - ours inside torch's inside ours, or a subclass's step
    calling super().step() - still make one call per step."""
    base = torch.optim.Optimizer
    original_init = base.__init__
    ours = set()
    wrapped = []  # (class, the step it had), in wrapping order
    state = {"depth": 0, "removed": False}

    def wrap(cls):
        step = cls.step
        if step in ours or cls is base:
            return

        @functools.wraps(step)
        def step_and_mark(self, *args, **kwargs):
            state["depth"] += 1
            try:
                result = step(self, *args, **kwargs)
            finally:
                state["depth"] -= 1
            if state["depth"] == 0 and not state["removed"]:
                callback()
            return result

        ours.add(step_and_mark)
        wrapped.append((cls, cls.__dict__.get("step")))
        cls.step = step_and_mark

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    for cls in list(subclasses(base)):
        wrap(cls)

    @functools.wraps(original_init)
    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            wrap(type(self))
        except Exception:
            pass

    base.__init__ = init

    def remove():
        state["removed"] = True
        base.__init__ = original_init
        for cls, own_step in reversed(wrapped):
            if own_step is None:
                try:
                    del cls.step
                except AttributeError:
                    pass
            else:
                cls.step = own_step
        wrapped.clear()

    return remove


def warn(message):
    sys.stderr.write(f"ferret: {message}\n")
