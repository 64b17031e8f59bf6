"""ferret.profile() and ferret.bench() with Debian's torch on CPU (the legacy profiler there;
torch.profiler's Kineto path where torch has it)."""
import json
import os
import sqlite3
import statistics
import unittest

import ferret
from ferret_test_env import TempDirTest, cli, format_family, recorded_format

try:
    import torch
except ImportError:  # the module's own tests still run; these need torch
    torch = None


if torch is not None:
    from scripts.slow_dataset import SlowDataset  # ~4 ms a sample, like decoding from a slow disk


def small_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


@unittest.skipIf(torch is None, "SKIPPED: torch is not importable by this interpreter (Debian: python3-torch)")
class Profile(TempDirTest):
    def setUp(self):
        super().setUp()
        torch.set_num_threads(1)

    def test_a_slow_dataset_is_input_bound_and_its_settings_are_quoted(self):
        model = small_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)  # made before the block: still hooked
        out = os.path.join(self.tmp, "p.trace.json.gz")
        with ferret.profile(steps=3, warmup=1, out=out, quiet=True) as p:
            loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, num_workers=0)
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.assertEqual(p.trace_path, out)
        self.assertTrue(os.path.getsize(out) > 0)
        # warm-up step 0 recorded, steps 1-3 analysed; recording stopped after step 3.
        self.assertEqual(list(ferret.load(out).steps["number"]), [0, 1, 2, 3])
        trace = p.result["traces"][0]
        self.assertEqual(format_family(trace["format"]), recorded_format(torch))
        self.assertEqual(trace["verdict"]["finding_id"], "input-bound", trace["verdict"])
        self.assertEqual(p.result, ferret.analyze(out, steps="1-", dataloaders=p.dataloaders, host=p.host))
        # The host, as this process reads it itself (the same torch and machine).
        self.assertEqual(trace["host"]["threads"], torch.get_num_threads())
        self.assertEqual(trace["host"]["cpus"], len(os.sched_getaffinity(0)))
        self.assertIn(f"BLAS_INFO={trace['host']['blas_info']},", torch.__config__.show())
        self.assertNotIn("host", ferret.analyze(out, steps="1-")["traces"][0])
        self.assertEqual(p.dataloaders, [{"batch_size": 8, "num_workers": 0, "pin_memory": False,
                                          "prefetch_factor": None, "persistent_workers": False}])
        finding = next(f for f in trace["findings"] if f["id"] == "input-bound")
        self.assertIn("DataLoader(batch_size=8, num_workers=0, pin_memory=False, persistent_workers=False)",
                      finding["detail"])
        # After the block, optimizer steps no longer mark anything (the hooks are gone).
        self.assertNotEqual(type(opt).step.__code__.co_name, "step_and_mark")

    def test_steps_marked_by_hand_in_a_loop_without_an_optimizer(self):
        weights = [torch.randn(256, 256) for _ in range(3)]
        x = torch.randn(128, 256)
        with torch.no_grad(), ferret.profile(steps=4, warmup=1, out=os.path.join(self.tmp, "i.json.gz"),
                                             quiet=True) as p:
            for _ in range(10):
                h = x
                for w in weights:
                    h = torch.relu(h @ w)
                p.step()
        self.assertEqual(list(ferret.load(p.trace_path).steps["number"]), [0, 1, 2, 3, 4])
        self.assertEqual(p.result["traces"][0]["window"]["label"], "ProfilerStep#1-4")

    def test_a_block_that_ends_early_keeps_what_it_recorded(self):
        model = small_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with ferret.profile(steps=50, out=os.path.join(self.tmp, "e.json.gz"), quiet=True) as p:
            for _ in range(4):
                model(torch.randn(8, 16)).sum().backward()
                opt.step()
        # Steps 0-3 ended at optimizer steps; step 4 was cut short by the block's end: recorded,
        # but left out of the analysis with the warm-up step 0.
        self.assertEqual(list(ferret.load(p.trace_path).steps["number"]), [0, 1, 2, 3, 4])
        self.assertEqual(p.result["traces"][0]["window"]["label"], "ProfilerStep#1-3")

    def test_an_exception_in_the_block_passes_through_and_keeps_the_trace(self):
        with self.assertRaises(KeyError):
            with ferret.profile(out=os.path.join(self.tmp, "x.json.gz"), quiet=True) as p:
                torch.randn(4).sum()
                raise KeyError("user code")
        self.assertTrue(os.path.exists(p.trace_path))
        self.assertIsNone(p.result)


@unittest.skipIf(torch is None, "SKIPPED: torch is not importable by this interpreter (Debian: python3-torch)")
class Bench(TempDirTest):
    def test_statistics_of_the_samples_and_the_shared_store(self):
        torch.set_num_threads(1)
        model = torch.nn.Linear(256, 256)
        x = torch.randn(32, 256)
        db = os.path.join(self.tmp, "history.db")
        result = ferret.bench(model, (x,), warmup=3, runs=25, record=True, label="linear-py", db=db, quiet=True)
        self.assertEqual(len(result.samples), 25)
        self.assertEqual(result["schema"], "ferret.bench/1")
        text = json.dumps(result)
        self.assertIn(repr(statistics.median(result.samples))[:8], text)
        # The run sits in the CLI's store with every sample: `ferret history` lists it.
        history = json.loads(cli("history", "--db", db, "--json").stdout)
        self.assertIn("linear-py", json.dumps(history))
        with sqlite3.connect(db) as con:
            stored = sorted(v for (v,) in con.execute("SELECT value FROM samples"))
        self.assertEqual(stored, sorted(result.samples))

    def test_bad_settings_are_refused_before_running(self):
        with self.assertRaises(ValueError):
            ferret.bench(torch.nn.Linear(2, 2), torch.randn(1, 2), runs=5, time_seconds=1, quiet=True)
        with self.assertRaises(ValueError):
            ferret.bench(torch.nn.Linear(2, 2), torch.randn(1, 2), record=True, quiet=True)


if __name__ == "__main__":
    unittest.main()
