"""The project's torch 2.x samples (examples/record_torch2_traces.py, Kineto on the CPU): ferret's
verdict on each, and its key figures against a second reader of the raw events written here (gzip
+ json, no ferret code). Runs with any Python: the samples are committed files."""
import gzip
import json
import os
import re
import unittest

from ferret_test_env import EXAMPLES, cli

GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
COMPILE_NAMES = {"entire_frame_compile", "entire_backward_compile"}


def sample(name):
    return os.path.join(EXAMPLES, name)


def example_file(kind, name):  # examples/jobs, examples/evidence
    return os.path.join(os.path.dirname(EXAMPLES), kind, name)


def events(path):
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def steps(evs):
    """The ProfilerStep spans, in time order: (number, start, end) in us."""
    out = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in evs
           if re.fullmatch(r"ProfilerStep#\d+", e["name"])]
    return sorted(out, key=lambda s: s[1])


def window(evs):
    s = steps(evs)
    return s[0][1], s[-1][2], len(s)


def inside(e, start, end):
    return start <= e["ts"] < end


def union(intervals):
    total, cur_start, cur_end = 0.0, None, None
    for a, b in sorted(intervals):
        if cur_end is None or a > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = a, b
        else:
            cur_end = max(cur_end, b)
    return total + (cur_end - cur_start if cur_end is not None else 0)


def minus(intervals, cover):
    """Length of the union of `intervals` not covered by the union of `cover`."""
    return union(intervals) - union([(max(a, c), min(b, d)) for a, b in intervals for c, d in cover
                                     if min(b, d) > max(a, c)])


def analyze(path, *args):
    return json.loads(cli("analyze", "--json", *args, path).stdout)


def finding(trace, fid):
    return next((f for f in trace["findings"] if f["id"] == fid), None)


def evidence(f):
    return {e["name"]: e["value"] for e in f["evidence"]}


class Torch2Samples(unittest.TestCase):
    def test_every_sample_is_kineto_and_small(self):
        names = [n for n in os.listdir(EXAMPLES) if n.startswith("torch2-")]
        self.assertEqual(len(names), 11, names)
        job = example_file("jobs", "torch2-ddp-gloo")
        paths = [sample(n) for n in names] + [os.path.join(job, r) for r in os.listdir(job)] + \
            [example_file("evidence", n) for n in ("torch2-memory.et.json.gz", "torch2-memory-timeline.json.gz")]
        for p in paths:
            self.assertLess(os.path.getsize(p), 2 << 20, p)
        report = analyze(sample("torch2-matmul-fp32.json.gz"))["traces"][0]
        self.assertTrue(report["format"].startswith("kineto"), report["format"])

    def test_input_bound_and_what_workers_bought(self):
        path = sample("torch2-input-bound.json.gz")
        evs = events(path)
        start, end, n = window(evs)
        waits = sum(e["dur"] for e in evs if e["name"].startswith("enumerate(DataLoader)#") and inside(e, start, end))
        t = analyze(path)["traces"][0]
        self.assertEqual(t["verdict"]["finding_id"], "input-bound")
        f = finding(t, "input-bound")
        ev = evidence(f)
        self.assertAlmostEqual(ev["dataloader_ms_per_step"], waits / n / 1000, delta=0.01)
        # The what-if's step time against the recorded fix: the same loop with two workers.
        predicted_step = ev["step_ms"] / f["predicted_speedup"]
        w_start, w_end, w_n = window(events(sample("torch2-input-workers.json.gz")))
        measured_step = (w_end - w_start) / w_n / 1000
        self.assertLess(abs(predicted_step - measured_step) / measured_step, 0.15, (predicted_step, measured_step))

    def test_workers_hide_the_input(self):
        path = sample("torch2-input-workers.json.gz")
        evs = events(path)
        start, end, n = window(evs)
        waits = sum(e["dur"] for e in evs if e["name"].startswith("enumerate(DataLoader)#") and inside(e, start, end))
        self.assertLess(waits, 0.05 * (end - start))  # under 5% of the steps
        t = analyze(path)["traces"][0]
        self.assertIsNone(finding(t, "input-bound"))
        self.assertEqual(t["verdict"]["finding_id"], "matmul-dominated")

    def test_item_reads_on_the_cpu_cost_no_sync(self):
        for name, reads in (("torch2-host-sync.json.gz", 20), ("torch2-no-sync.json.gz", 0)):
            path = sample(name)
            evs = events(path)
            start, end, n = window(evs)
            items = sum(1 for e in evs if e["name"] == "aten::item" and inside(e, start, end)
                        and e.get("cat") == "cpu_op")
            self.assertEqual(items, reads * n, name)
            t = analyze(path, "--top", "1000")["traces"][0]
            row = next((r for r in t["hot_spots"]["ops_by_host"] if r["name"] == "aten::item"), None)
            self.assertEqual(row["calls"] if row else 0, items, name)
            # Nothing waits on a CPU tensor's read: never the verdict.
            self.assertNotEqual(t["verdict"]["finding_id"], "host-sync", name)

    def test_fp32_matmuls_dominate(self):
        path = sample("torch2-matmul-fp32.json.gz")
        evs = events(path)
        start, end, _ = window(evs)
        mm = sum(e["dur"] for e in evs if e["name"] in GEMMS and inside(e, start, end))
        t = analyze(path)["traces"][0]
        self.assertEqual(t["verdict"]["finding_id"], "matmul-dominated")
        ev = evidence(finding(t, "matmul-dominated"))
        # ferret counts self time of every matmul-family op; the GEMMs' own spans are nearly all of it.
        self.assertAlmostEqual(ev["matmul_conv_ms"], mm / 1000, delta=0.01 * mm / 1000)
        self.assertGreater(finding(t, "matmul-dominated")["predicted_speedup"], 1.5)

    def test_bf16_autocast_is_seen_as_done(self):
        path = sample("torch2-matmul-bf16.json.gz")
        evs = events(path)
        start, end, _ = window(evs)
        gemms = [e for e in evs if e["name"] in GEMMS and inside(e, start, end)]
        low = sum(e["dur"] for e in gemms if e["args"]["Input type"][0] in ("c10::BFloat16", "c10::Half"))
        t = analyze(path)["traces"][0]
        f = finding(t, "matmul-dominated")
        self.assertIn("already in bf16", f["title"])
        self.assertAlmostEqual(evidence(f)["reduced_precision_gemm_pct"],
                               100 * low / sum(e["dur"] for e in gemms), delta=0.01)
        self.assertEqual(f["max_speedup"], 1.0)
        self.assertTrue(any("autocast" in x["fix"] for x in f["fixes_left_out"]), f["fixes_left_out"])
        self.assertFalse(any("autocast(\"cpu\"" in x for x in f["fixes"]), f["fixes"])

    def test_unfused_attention_and_sdpa(self):
        t = analyze(sample("torch2-attention-unfused.json.gz"))["traces"][0]
        self.assertEqual(t["verdict"]["finding_id"], "unfused-attention")
        path = sample("torch2-attention-sdpa.json.gz")
        evs = events(path)
        self.assertTrue(any(e["name"] == "aten::_scaled_dot_product_flash_attention_for_cpu" for e in evs))
        self.assertIsNone(finding(analyze(path)["traces"][0], "unfused-attention"))

    def test_a_recompile_in_the_window(self):
        path = sample("torch2-compile.json.gz")
        evs = events(path)
        start, end, _ = window(evs)
        spans = [(e["ts"], min(end, e["ts"] + e["dur"])) for e in evs if e.get("cat") == "cpu_op" and
                 inside(e, start, end) and (e["name"] in COMPILE_NAMES or e["name"].endswith(" (dynamo_timed)"))]
        ids = {m.group(1) for e in evs if inside(e, start, end) for m in [re.search(r"compile_id=(\d+/\d+)",
                                                                                     e["name"])] if m}
        recompiles = {i for i in ids if int(i.split("/")[1]) >= 1}
        t = analyze(path)["traces"][0]
        f = t["findings"][0]
        self.assertEqual(t["verdict"]["finding_id"], "initialisation-window")
        self.assertIn("mostly torch.compile recompiling", f["title"])
        self.assertAlmostEqual(evidence(f)["torch.compile: Dynamo / Inductor / Triton compilation"],
                               union(spans) / 1000, delta=0.001 * union(spans) / 1000)
        self.assertIn(f"{len(recompiles)} recompilations among them", f["detail"])
        self.assertIn("TORCH_LOGS=recompiles", f["fixes"][0])

    def test_notebook_iterations_without_profiler_steps(self):
        path = sample("torch2-notebook.json.gz")
        evs = events(path)
        opt = [e for e in evs if e["name"].startswith("Optimizer.step#Adam.step")]
        self.assertEqual(len(opt), 5)
        t = analyze(path)["traces"][0]
        self.assertEqual(t["window"]["source"], "steps")
        self.assertEqual(t["steps"]["marker_name"], "Optimizer.step#Adam.step")
        self.assertEqual(t["steps"]["count"], 4)  # the first, cold iteration left out and said
        self.assertEqual(t["steps"]["cold_first"]["number"], 1)
        first = min(opt, key=lambda e: e["ts"])
        self.assertLess(first["ts"], t["steps"]["list"][0]["start_us"])

    def test_ddp_over_gloo_exposes_the_all_reduce(self):
        folder = example_file("jobs", "torch2-ddp-gloo")
        for rank in (0, 1):
            path = os.path.join(folder, f"rank-{rank}.json.gz")
            evs = events(path)
            start, end, n = window(evs)
            gloo = [e for e in evs if e["name"].startswith("gloo:")]
            gloo_threads = {e["tid"] for e in gloo}
            comm = [(max(start, e["ts"]), min(end, e["ts"] + e["dur"])) for e in gloo
                    if e["ts"] + e["dur"] > start and e["ts"] < end]
            busy = [(e["ts"], e["ts"] + e["dur"]) for e in evs
                    if e.get("cat") == "cpu_op" and e["tid"] not in gloo_threads and not
                    (e["name"].startswith("c10d::") or "wait" in e["name"])]
            exposed_ms = minus(comm, busy) / n / 1000
            t = analyze(path)["traces"][0]
            self.assertEqual(t["verdict"]["finding_id"], "exposed-communication", rank)
            f = finding(t, "exposed-communication")
            self.assertIn("waits on gloo", f["title"])
            self.assertAlmostEqual(evidence(f)["exposed_communication_ms_per_step"], exposed_ms,
                                   delta=0.001 * exposed_ms)
            self.assertGreater(f["predicted_speedup"], 1.1)
        job = json.loads(cli("analyze", "--json", folder).stdout)
        self.assertEqual(job["schema"], "ferret.job/1")
        self.assertEqual(job["verdict"]["finding_id"], "job-exposed-communication")

    def test_memory_profile(self):
        path = sample("torch2-memory.json.gz")
        with gzip.open(path, "rt") as f:
            raw = json.load(f)["traceEvents"]
        mem = [e for e in raw if e.get("name") == "[memory]"]
        self.assertGreater(len(mem), 0)
        peak = max(e["args"]["Total Allocated"] for e in mem)
        t = analyze(path)["traces"][0]
        self.assertEqual(t["memory"]["devices"][0]["peak_allocated_bytes"], peak)
        # Adam reads its step counters with .item() (CPU tensors): no sync to report.
        self.assertTrue(any(e.get("name") == "aten::item" for e in raw))
        self.assertIsNone(finding(t, "host-sync"))
        # The Execution Trace and the memory timeline recorded beside it are kept for their readers.
        for extra in ("torch2-memory.et.json.gz", "torch2-memory-timeline.json.gz"):
            with gzip.open(example_file("evidence", extra), "rt") as f:
                self.assertTrue(json.load(f))


if __name__ == "__main__":
    unittest.main()
