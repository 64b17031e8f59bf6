"""ferret.analyze / report / diff / load against the command line and hand-computed figures."""
import gzip
import json
import os
import threading
import time
import unittest

import numpy as np

import ferret
from ferret_test_env import TempDirTest, cli, example


class AnalyzeMatchesTheCli(TempDirTest):
    def test_version_is_the_cli_version(self):
        self.assertIn(ferret.version(), cli("--version").stdout)
        self.assertEqual(ferret.__version__, ferret.version())

    def test_document_report_and_markdown_equal_the_cli(self):
        for name in ("cpu-input-bound.json.gz", "cpu-host-sync.json.gz", "cpu-unfused-attention.json.gz"):
            path = example(name)
            with self.subTest(trace=name):
                result = ferret.analyze(path)
                self.assertEqual(result, json.loads(cli("analyze", "--json", path).stdout))
                self.assertEqual(ferret.report(result, "text"), cli("analyze", path).stdout)
                self.assertEqual(ferret.report(result, "md"), cli("analyze", "--md", path).stdout)
                self.assertEqual(json.loads(ferret.report(result, "json")), result)
                self.assertEqual(result["schema"], "ferret.analysis/1")
                self.assertEqual(result.verdict, result["traces"][0]["verdict"]["headline"])

    def test_the_html_page_is_the_clis(self):
        path = example("cpu-input-bound.json.gz")
        page = os.path.join(self.tmp, "r.html")
        cli("analyze", "--html", page, path)
        with open(page, encoding="utf-8") as f:
            self.assertEqual(ferret.report(ferret.analyze(path), "html"), f.read())
        # A document read back from disk renders too (the page is drawn from the JSON).
        self.assertIn('id="ferret-data"', ferret.report(json.loads(json.dumps(ferret.analyze(path))), "html"))

    def test_options_are_the_cli_options(self):
        path = example("cpu-input-bound.json.gz")
        self.assertEqual(ferret.analyze(path, steps=(2, 3), top=3),
                         json.loads(cli("analyze", "--json", "--steps", "2-3", "--top", "3", path).stdout))
        self.assertEqual(ferret.analyze(path, steps="2-"), json.loads(cli("analyze", "--json", "--steps", "2-", path).stdout))

    # A command's options are defined once: every flag of `ferret analyze` and `ferret diff` is a
    # keyword of ferret.analyze / ferret.diff, or says here why it belongs to the command line alone.
    PRESENTATION = {
        "--json": "ferret.analyze / ferret.diff return the document; ferret.report renders any format",
        "--md": "ferret.report(result, 'md')",
        "--html": "ferret.report(result, 'html')",
        "--width": "a terminal's width: the text report is rendered without one",
    }
    EVIDENCE_PRESENTATION = {k: v for k, v in PRESENTATION.items() if k != "--html"}
    CLI_ONLY = {
        "analyze": dict(PRESENTATION, **{
            "--job": "grouping the command line chooses per run; a directory is a job through the API too",
            "--per-trace": "grouping the command line chooses per run",
            "--jobs": "traces analysed at once by one process: the caller's threads in Python",
        }),
        "diff": dict(PRESENTATION),
        "nccl": dict(EVIDENCE_PRESENTATION),
        "smi": dict(EVIDENCE_PRESENTATION),
        "memory": dict(EVIDENCE_PRESENTATION),
        "whatif": {"--json": PRESENTATION["--json"], "--width": PRESENTATION["--width"]},
        "annotate": {},
    }
    KEYWORD_OF = {"--timeline-definition": "timeline", "--trace": "traces"}

    def test_every_flag_is_a_keyword_or_says_why_not(self):
        import inspect
        import re
        for command, function in (("analyze", ferret.analyze), ("diff", ferret.diff), ("nccl", ferret.nccl),
                                  ("smi", ferret.smi), ("memory", ferret.memory), ("whatif", ferret.whatif),
                                  ("annotate", ferret.annotate)):
            flags = set(re.findall(r"(?m)^\s+(--[a-z][a-z-]*)", cli(command, "--help").stdout))
            self.assertIn("--max-memory", flags)
            keywords = set(inspect.signature(function).parameters)
            cli_only = self.CLI_ONLY[command]
            for flag in sorted(flags):
                with self.subTest(command=command, flag=flag):
                    if flag in cli_only:
                        self.assertNotIn(flag[2:].replace("-", "_"), keywords)
                        continue
                    self.assertIn(self.KEYWORD_OF.get(flag, flag[2:].replace("-", "_")), keywords)
            self.assertEqual(set(cli_only) - flags, set(), f"a CLI-only flag `ferret {command}` no longer has")

    def test_each_shared_option_prints_the_clis_bytes(self):
        path = example("cpu-input-bound.json.gz")
        peaks = os.path.join(self.tmp, "peaks.json")
        with open(peaks, "w") as f:
            json.dump({"hbm_tb_per_s": 1, "matrix_tflop_per_s": {"bf16": 100}, "vector_tflop_per_s": {"fp32": 2}}, f)
        cases = [({"peaks": peaks}, ["--peaks", peaks]), ({"timeline": "hta"}, ["--timeline-definition", "hta"]),
                 ({"time": "1-"}, ["--time", "1-"]), ({"window": "ProfilerStep#2"}, ["--window", "ProfilerStep#2"]),
                 ({"threads": 1, "max_memory": "1GiB"}, ["--threads", "1", "--max-memory", "1GiB"])]
        plain = ferret.analyze(path)
        for keywords, flags in cases:
            with self.subTest(flags=flags):
                result = ferret.analyze(path, **keywords)
                self.assertEqual(result, json.loads(cli("analyze", "--json", *flags, path).stdout))
                self.assertEqual(ferret.report(result, "text"), cli("analyze", *flags, path).stdout)
        # The measured ceilings reach the roofline: the mapping did not drop the file.
        self.assertIsNone(plain["traces"][0]["roofline"]["ceilings"]["peaks_file"])
        # On a GPU trace the measured ceilings reach the roofline: the mapping did not drop the file.
        gpu = os.path.join(self.tmp, "compute-bound.json")
        cli("gen", "scenario", "compute-bound", "--steps", "3", "-o", gpu)
        with_peaks = ferret.analyze(gpu, peaks=peaks)
        self.assertEqual(with_peaks, json.loads(cli("analyze", "--json", "--peaks", peaks, gpu).stdout))
        self.assertEqual(with_peaks["traces"][0]["roofline"]["ceilings"]["peaks_file"], peaks)
        self.assertNotEqual(with_peaks["traces"][0]["roofline"], ferret.analyze(gpu)["traces"][0]["roofline"])

    def test_a_job_directory_gives_the_job_document(self):
        job = os.path.join(self.tmp, "job")
        cli("gen", "job", "--ranks", "4", "--steps", "3", "-o", job)
        result = ferret.analyze(job)
        self.assertEqual(result["schema"], "ferret.job/1")
        self.assertEqual(result, json.loads(cli("analyze", "--json", job).stdout))
        self.assertEqual(ferret.report(result), cli("analyze", job).stdout)

    def test_a_missing_trace_raises_with_the_cli_message(self):
        missing = os.path.join(self.tmp, "nope.json")
        with self.assertRaises(ferret.Error) as caught:
            ferret.analyze(missing)
        cli_error = cli("analyze", missing, check=False)
        self.assertEqual(cli_error.returncode, 2)
        self.assertIn(str(caught.exception), cli_error.stderr)
        self.assertIn("nope.json", str(caught.exception))

    def test_number_arguments_are_finite_and_in_range_as_on_the_cli(self):
        trace = example("cpu-input-bound.json.gz")
        for bad in (float("nan"), float("inf"), -1, "x"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                ferret.diff(trace, trace, fail_if_slower=bad)
        self.assertEqual(ferret.diff(trace, trace, fail_if_slower=5).exit_code,
                         cli("diff", "--fail-if-slower", "5", trace, trace, check=False).returncode)

    def test_paths_are_str_bytes_or_pathlike_and_never_hold_nul(self):
        import pathlib
        trace = example("cpu-input-bound.json.gz")
        expected = dict(ferret.analyze(trace))
        self.assertEqual(dict(ferret.analyze(trace.encode())), expected)
        self.assertEqual(dict(ferret.analyze(pathlib.Path(trace))), expected)
        with self.assertRaises(ValueError):
            ferret.analyze(trace + "\x00.other")
        with self.assertRaises(ValueError):
            ferret.load(trace + "\x00")
        with self.assertRaises(TypeError):
            ferret.analyze(42)

    def test_a_bad_option_is_an_option_error(self):
        with self.assertRaises(ferret.OptionError) as caught:
            ferret.analyze(example("cpu-input-bound.json.gz"), steps="5-x")
        self.assertIn("5-x", str(caught.exception))
        self.assertTrue(issubclass(ferret.OptionError, ValueError))

    def test_report_refuses_what_it_cannot_render(self):
        result = ferret.analyze(example("cpu-input-bound.json.gz"))
        with self.assertRaises(ValueError):
            ferret.report(result, "pdf")
        with self.assertRaises(TypeError):
            ferret.report(dict(result), "text")

    def test_trace_text_reaches_python_escaped(self):
        # A kernel name with a terminal escape: the text report shows it visibly, never raw.
        path = os.path.join(self.tmp, "escape.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": [
                {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
                {"ph": "X", "cat": "cpu_op", "name": "evil\u001b]0;pwned\u0007op", "pid": 1, "tid": 1, "ts": 1, "dur": 90},
                {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
                {"ph": "X", "cat": "cpu_op", "name": "evil\u001b]0;pwned\u0007op", "pid": 1, "tid": 1, "ts": 101, "dur": 90}]}, f)
        result = ferret.analyze(path)
        for text in (result.text, result.markdown):
            self.assertNotIn("\x1b", text)
        self.assertEqual(result.text, cli("analyze", path).stdout)

    def test_the_gil_is_released_while_cxx_works(self):
        big = os.path.join(self.tmp, "big.json")
        cli("gen", "inflate", "--from", example("cpu-input-bound.json.gz"), "--copies", "400", "-o", big)
        done = threading.Event()
        elapsed = []

        def work():
            start = time.perf_counter()
            ferret.analyze(big, threads=1)
            elapsed.append(time.perf_counter() - start)
            done.set()

        worker = threading.Thread(target=work)
        ticks = 0
        worker.start()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)
        worker.join()
        # Holding the GIL for the whole analysis would leave this thread a handful of ticks.
        self.assertGreater(elapsed[0], 0.05)
        self.assertGreater(ticks, 0.3 * elapsed[0] / 0.002)


class Diff(TempDirTest):
    def test_diff_equals_the_cli_and_keeps_the_gate(self):
        base = example("cpu-input-bound.json.gz")
        new = os.path.join(self.tmp, "slower.json")
        # NEW: the same trace with every duration doubled - a confirmed slowdown.
        with gzip.open(base, "rt") as f:
            doc = json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        for e in events:
            if "dur" in e:
                e["dur"] = e["dur"] * 2
            if "ts" in e:
                e["ts"] = e["ts"] * 2
        with open(new, "w") as f:
            json.dump(doc, f)
        result = ferret.diff(base, new, fail_if_slower=5)
        done = cli("diff", "--json", "--fail-if-slower", "5", base, new, check=False)
        self.assertEqual(result, json.loads(done.stdout))
        self.assertEqual(result.exit_code, done.returncode)
        self.assertIn(result.exit_code, (1, 3))
        self.assertEqual(ferret.report(result), cli("diff", "--fail-if-slower", "5", base, new, check=False).stdout)
        self.assertEqual(result["schema"], "ferret.diff/2")

    def test_an_unusable_side_names_it(self):
        with self.assertRaises(ferret.InputError) as caught:
            ferret.diff(example("cpu-input-bound.json.gz"), os.path.join(self.tmp, "missing.json"))
        self.assertTrue(str(caught.exception).startswith("NEW: "), str(caught.exception))


def data(*parts):
    return os.path.join(os.environ["FERRET_SOURCE_DIR"], "tests", "data", *parts)


class EvidenceCommandsMatchTheCli(TempDirTest):
    """ferret.nccl / smi / memory are `ferret nccl|smi|memory --json`: the document, its text and
    Markdown renderings, and its exit status, on every input of that kind the repository holds."""

    def expect_cli(self, function, command, inputs, keywords=None, flags=()):
        done = cli(command, "--json", *flags, *inputs, check=False)
        if done.returncode != 0 and not done.stdout:  # nothing could be read: an error, as the CLI's
            with self.assertRaises(ferret.Error) as caught:
                function(inputs, **(keywords or {}))
            notes = [line[len("ferret: "):] for line in done.stderr.splitlines()]
            self.assertEqual(str(caught.exception), "; ".join(notes))
            return None
        result = function(inputs, **(keywords or {}))
        self.assertEqual(result, json.loads(done.stdout))
        self.assertEqual(result.json_text, done.stdout)
        self.assertEqual(result.exit_code, done.returncode)
        self.assertEqual(ferret.report(result), cli(command, *flags, *inputs, check=False).stdout)
        self.assertEqual(ferret.report(result, "md"), cli(command, "--md", *flags, *inputs, check=False).stdout)
        return result

    def test_every_input_of_each_kind(self):
        for function, command, folder in ((ferret.nccl, "nccl", "nccl"), (ferret.smi, "smi", "smi"),
                                          (ferret.memory, "memory", "memory")):
            names = sorted(os.listdir(data(folder)))
            self.assertGreater(len(names), 5)
            for name in names:
                with self.subTest(command=command, input=name):
                    result = self.expect_cli(function, command, [data(folder, name)])
                    if result is not None:
                        self.assertEqual(result["schema"], f"ferret.{command}/1")
        logs = [data("nccl", name) for name in sorted(os.listdir(data("nccl")))]
        self.expect_cli(ferret.nccl, "nccl", logs)  # all ranks at once

    def test_each_keyword_gives_its_flags_bytes(self):
        trace = example("synthetic-communication-heavy.json.gz")
        log = data("nccl", "single_host_nvlink.log")
        self.expect_cli(ferret.nccl, "nccl", [log], {"traces": [trace], "threads": 1}, ["--trace", trace, "--threads", "1"])
        self.expect_cli(ferret.nccl, "nccl", [log], {"max_bytes_without_progress": "2KiB", "max_memory": "1GiB"},
                        ["--max-bytes-without-progress", "2KiB", "--max-memory", "1GiB"])
        for name in sorted(os.listdir(data("smi"))):
            with self.subTest(input=name):
                self.expect_cli(ferret.smi, "smi", [data("smi", name)],
                                {"interval": 2.5, "utc_offset": "+02:00", "max_memory": "1GiB"},
                                ["--interval", "2.5", "--utc-offset", "+02:00", "--max-memory", "1GiB"])
        self.expect_cli(ferret.memory, "memory", [data("memory", "summary-torch2.txt")], {"max_memory": "1GiB"},
                        ["--max-memory", "1GiB"])

    def test_bad_inputs_and_values_are_the_clis_errors(self):
        with self.assertRaises(ferret.Error) as caught:
            ferret.nccl(os.path.join(self.tmp, "missing.log"))
        self.assertIn("none of the NCCL logs could be read", str(caught.exception))
        with self.assertRaises(ferret.Error):
            ferret.memory(os.path.join(self.tmp, "missing.pickle"))
        with self.assertRaises(ferret.OptionError) as caught:
            ferret.smi(data("smi", sorted(os.listdir(data("smi")))[0]), utc_offset="+25")
        done = cli("smi", "--utc-offset", "+25", data("smi", sorted(os.listdir(data("smi")))[0]), check=False)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stderr, f"ferret: {caught.exception}\n")
        with self.assertRaises(ferret.OptionError):
            ferret.nccl(data("nccl", "single_host_nvlink.log"), max_memory="lots")
        with self.assertRaises(ValueError):
            ferret.smi(data("smi", sorted(os.listdir(data("smi")))[0]), interval=float("nan"))
        # No HTML page is drawn from these documents: the renderer is the analysis page's.
        with self.assertRaises(ValueError):
            ferret.report(ferret.memory(data("memory", "summary-torch2.txt")), "html")


class WhatIfAndAnnotateMatchTheCli(TempDirTest):
    def test_whatif_equals_the_cli_with_each_keyword(self):
        path = example("synthetic-input-bound.json.gz")
        cases = [({"remove": ["host-sync", "dataloader"]}, ["--remove", "host-sync", "--remove", "dataloader"]),
                 ({"remove": "dataloader", "steps": (6, 7)}, ["--remove", "dataloader", "--steps", "6-7"]),
                 ({"speedup": {"aten::mm": 2}}, ["--speedup", "aten::mm=2"]),
                 ({"fix": "input-bound", "threads": 1, "max_memory": "1GiB", "device": 0},
                  ["--fix", "input-bound", "--threads", "1", "--max-memory", "1GiB", "--device", "0"])]
        for keywords, flags in cases:
            with self.subTest(flags=flags):
                result = ferret.whatif(path, **keywords)
                done = cli("whatif", "--json", *flags, path, check=False)
                self.assertEqual(result.json_text, done.stdout)
                self.assertEqual(result.exit_code, done.returncode)
                self.assertEqual(result["schema"], "ferret.whatif/1")
                self.assertEqual(ferret.report(result), cli("whatif", *flags, path, check=False).stdout)
        with self.assertRaises(ValueError):
            ferret.report(ferret.whatif(path), "md")
        with self.assertRaises(ferret.OptionError) as caught:
            ferret.whatif(path, remove=["everything"])
        self.assertEqual(cli("whatif", "--remove", "everything", path, check=False).stderr,
                         f"ferret: {caught.exception}\n")
        with self.assertRaises(ferret.InputError):
            ferret.whatif(os.path.join(self.tmp, "missing.json"))

    def test_annotate_writes_the_clis_bytes(self):
        trace = example("synthetic-launch-bound.json.gz")
        by_api, by_cli = os.path.join(self.tmp, "api.json.gz"), os.path.join(self.tmp, "cli.json.gz")
        notes = ferret.annotate(trace, by_api, steps="6-7", plain=True)
        done = cli("annotate", "--steps", "6-7", "--plain", trace, "-o", by_cli)
        with open(by_api, "rb") as a, open(by_cli, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual("".join(f"ferret: {n}\n" for n in notes).replace(by_api, by_cli), done.stderr)
        with self.assertRaises(ferret.OptionError):
            ferret.annotate(trace, trace)  # never over the trace itself


# A hand-written trace: two steps, one op launching one kernel each (figures checked by hand).
SMALL = {"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1010, "dur": 50,
     "args": {"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"], "External id": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1020, "dur": 5,
     "args": {"correlation": 11}},
    {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 1030, "dur": 40,
     "args": {"correlation": 11, "grid": [2, 3, 1], "block": [128, 1, 1], "registers per thread": 64}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 1, "tid": 1, "ts": 1100, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1110, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1115, "dur": 4,
     "args": {"correlation": 12}},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1125, "dur": 10,
     "args": {"correlation": 12, "grid": [8, 1, 1], "block": [256, 1, 1]}},
]}


class Load(TempDirTest):
    def test_columns_hold_the_events_as_written(self):
        path = os.path.join(self.tmp, "small.json")
        with open(path, "w") as f:
            json.dump(SMALL, f)
        t = ferret.load(path)
        self.assertEqual(len(t), 8)
        self.assertEqual(list(t.names), [e["name"] for e in SMALL["traceEvents"]])
        self.assertEqual(list(t.events["ts_ns"]), [e["ts"] * 1000 for e in SMALL["traceEvents"]])
        self.assertEqual(list(t.events["dur_ns"]), [e["dur"] * 1000 for e in SMALL["traceEvents"]])
        self.assertEqual(t.events["ts_ns"].dtype, np.int64)
        self.assertEqual(list(t.kinds), ["user_annotation", "cpu_op", "cuda_runtime", "kernel", "user_annotation",
                                         "cpu_op", "cuda_runtime", "kernel"])
        self.assertEqual(list(t.events["pid"]), [1, 1, 1, 0, 1, 1, 1, 0])
        self.assertEqual(list(t.events["correlation"][[2, 3]]), [11, 11])
        self.assertEqual(t.events["correlation"][0], -1)
        # Nesting: the op inside step 7, the launch inside the op, the relu inside step 8.
        self.assertEqual(list(t.events["parent"]), [-1, 0, 1, -1, -1, 4, 5, -1])
        kernel_rows = t.events["kind"] == t.kind_code("kernel")
        self.assertEqual(list(kernel_rows.nonzero()[0]), [3, 7])
        self.assertEqual(list(t.kernels["event"]), [3, 7])
        self.assertEqual((t.kernels["grid_x"][0], t.kernels["grid_y"][0], t.kernels["block_x"][0]), (2, 3, 128))
        self.assertEqual(t.kernels["registers_per_thread"][0], 64)
        self.assertEqual(list(t.kernels["launcher"]), [2, 6])
        self.assertEqual(list(t.op_args["event"]), [1])
        self.assertEqual(t.strings[t.op_args["input_dims_id"][0]].replace(" ", ""), "[[4,8],[8,16]]")
        self.assertEqual(list(t.steps["number"]), [7, 8])
        self.assertEqual(list(t.steps["start_ns"]), [1_000_000, 1_100_000])
        self.assertEqual(list(t.steps["kernels"]), [1, 1])
        # The step ends where its GPU work does: step 7's kernel ends at 1070 us, inside its span.
        self.assertEqual(list(t.steps["gpu_start_ns"]), [1_030_000, 1_125_000])

    def test_load_agrees_with_the_cli_on_a_real_trace(self):
        path = example("cpu-unfused-attention.json.gz")
        t = ferret.load(path)
        info = json.loads(cli("info", "--json", path).stdout)
        self.assertEqual(len(t), info["events"] if "events" in info else info["traces"][0]["events"])
        self.assertTrue(np.all(t.events["dur_ns"] >= 0))

    def test_a_broken_trace_loads_what_is_sound_and_says_so(self):
        path = os.path.join(self.tmp, "cut.json")
        text = json.dumps(SMALL)
        with open(path, "w") as f:
            f.write(text[: text.index("aten::relu") - 40])  # cut inside the last event
        t = ferret.load(path)
        self.assertGreaterEqual(len(t), 4)
        self.assertTrue(t.notes, "the cut must be reported")


if __name__ == "__main__":
    unittest.main()
