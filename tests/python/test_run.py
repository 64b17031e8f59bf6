"""`ferret run -- COMMAND`: real scripts profiled unmodified with Debian's torch on CPU."""
import json
import os
import subprocess
import sys
import unittest

import ferret
from ferret_test_env import FERRET, TempDirTest, cli

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
PYTHON = sys.executable

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def script(name):
    return os.path.join(SCRIPTS, name)


@unittest.skipIf(not HAVE_TORCH, "SKIPPED: torch is not importable by this interpreter (Debian: python3-torch)")
class Run(TempDirTest):
    def run_ferret(self, *args, out=None):
        out = out or os.path.join(self.tmp, "run")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # ferret run finds its own package; the script must not need ours
        done = subprocess.run([FERRET, "run", "--out", out, *args], capture_output=True, text=True, env=env,
                              timeout=600)
        return done, out

    def test_a_slow_dataset_loop_is_input_bound_with_num_workers_quoted(self):
        done, out = self.run_ferret("--steps", "3", "--json", "--", PYTHON, script("slow_dataset.py"), "0")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("trained 8 steps", done.stdout)  # the script's own output passes through
        report = json.loads(done.stdout[done.stdout.index("{"):])
        with open(os.path.join(out, "report.json")) as f:
            self.assertEqual(json.load(f), report)
        trace = report["traces"][0]
        self.assertEqual(trace["verdict"]["finding_id"], "input-bound")
        finding = next(f for f in trace["findings"] if f["id"] == "input-bound")
        self.assertIn("num_workers=0", finding["detail"])
        self.assertIn("DataLoader(batch_size=8, num_workers=0, pin_memory=False", finding["detail"])
        if trace["format"] == "legacy-autograd":  # with_stack gives no frames there: say so
            self.assertIn("legacy autograd export holds no Python frames", finding["detail"])
        # Recording began after the first optimizer step (--wait 1): step 1 is the warm-up, 2-4 analysed.
        path = os.path.join(out, "trace.trace.json.gz")
        self.assertEqual(list(ferret.load(path).steps["number"]), [1, 2, 3, 4])
        # The same window and numbers as analysing the trace by hand; only the DataLoader quote differs.
        by_hand = json.loads(cli("analyze", "--json", "--steps", "2-", path).stdout)["traces"][0]
        self.assertEqual({k: v for k, v in trace.items() if k not in ("findings", "verdict")},
                         {k: v for k, v in by_hand.items() if k not in ("findings", "verdict")})
        self.assertEqual(trace["verdict"]["finding_id"], by_hand["verdict"]["finding_id"])

    def test_the_exit_status_passes_through_after_the_analysis(self):
        done, out = self.run_ferret("--", PYTHON, script("slow_dataset.py"), "3")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("Input-bound", done.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "report.json")))

    def test_item_per_step_shows_the_syncs(self):
        done, out = self.run_ferret("--steps", "4", "--json", "--", PYTHON, script("item_sync.py"))
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout[done.stdout.index("{"):])
        sync = next((f for f in report["traces"][0]["findings"] if f["id"] == "host-sync"), None)
        self.assertIsNotNone(sync, [f["id"] for f in report["traces"][0]["findings"]])
        # 30 reads per step over the 4 analysed steps.
        self.assertIn("aten::item", sync["detail"])
        evidence = {e["name"]: e["value"] for e in sync["evidence"]}
        self.assertEqual(evidence["syncs"], 120)
        self.assertEqual(evidence["steps_with_syncs"], 4)

    def test_two_gloo_ranks_give_a_job_report(self):
        # The launcher is a Python process too: it never steps, so it writes no trace.
        done, out = self.run_ferret("--steps", "3", "--json", "--", PYTHON, script("launch_two_ranks.py"), "29517",
                                    script("ddp_gloo.py"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("rank 0 of 2 done", done.stdout)
        self.assertIn("rank 1 of 2 done", done.stdout)
        self.assertEqual(sorted(n for n in os.listdir(out) if n.endswith(".trace.json.gz")),
                         ["rank-0.trace.json.gz", "rank-1.trace.json.gz"])
        report = json.loads(done.stdout[done.stdout.index('{\n  "schema"'):])
        self.assertEqual(report["schema"], "ferret.job/1")
        self.assertEqual(len(report["ranks"]), 2)
        self.assertEqual(sorted(r["rank"] for r in report["ranks"]), [0, 1])
        with open(os.path.join(out, "report.json")) as f:
            self.assertEqual(json.load(f), report)

    def test_a_command_without_optimizer_steps_says_so(self):
        done, out = self.run_ferret("--", PYTHON, "-c", "import torch; print(torch.ones(2).sum().item())")
        self.assertEqual(done.returncode, 2)
        self.assertIn("2.0", done.stdout)
        self.assertIn("no profiler step", done.stderr)

    def test_a_command_that_cannot_start(self):
        done, _ = self.run_ferret("--", os.path.join(self.tmp, "no-such-program"))
        self.assertEqual(done.returncode, 127)
        self.assertIn("cannot run", done.stderr)

    def test_a_folder_with_traces_is_refused(self):
        out = os.path.join(self.tmp, "used")
        os.makedirs(out)
        open(os.path.join(out, "rank-0.trace.json.gz"), "w").close()
        done, _ = self.run_ferret("--", PYTHON, "-c", "pass", out=out)
        self.assertEqual(done.returncode, 2)
        self.assertIn("already holds traces", done.stderr)


if __name__ == "__main__":
    unittest.main()
