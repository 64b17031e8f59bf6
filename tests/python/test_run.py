"""`ferret run -- COMMAND`: real scripts profiled unmodified with Debian's torch on CPU."""
import json
import os
import signal
import socket
import subprocess
import sys
import unittest

import ferret
from ferret_test_env import FERRET, TempDirTest, cli, format_family, recorded_format

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
PYTHON = sys.executable

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    torch = None
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
        self.assertEqual(format_family(trace["format"]), recorded_format(torch))
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
        # ... and the host, which only the run can see.
        self.assertEqual({k: v for k, v in trace.items() if k not in ("findings", "verdict", "host")},
                         {k: v for k, v in by_hand.items() if k not in ("findings", "verdict")})
        self.assertEqual(trace["verdict"]["finding_id"], by_hand["verdict"]["finding_id"])
        self.assertNotIn("host", by_hand)
        self.check_host(trace["host"])

    # The CPU is a device too: the run records which BLAS torch calls, and where it is the reference
    # one (Debian's torch on the system libblas.so.3 with libblas3 behind it) the verdict names it as
    # the cause, not a precision step; under an optimised library (PyPI's MKL) nothing blames it.
    def test_a_matmul_loop_names_the_blas_torch_calls(self):
        done, _ = self.run_ferret("--steps", "2", "--json", "--", PYTHON, script("mlp_train.py"))
        self.assertEqual(done.returncode, 0, done.stderr)
        trace = json.loads(done.stdout[done.stdout.index("{"):])["traces"][0]
        self.check_host(trace["host"])
        verdict = trace["verdict"]["finding_id"]
        if trace["host"]["blas"] == "the reference BLAS (netlib)":
            self.assertEqual(verdict, "slow-cpu-matmul", trace["verdict"])
            finding = trace["findings"][0]
            self.assertIn("torch calls the reference BLAS (netlib)", finding["title"])
            self.assertGreater(finding["max_speedup"], 2.0)  # at least 10 -> half the CPU's ceiling
            self.assertTrue(finding["fixes"][0].startswith("Use the PyPI wheel"), finding["fixes"])
            # The live measurement agrees: a triple loop cannot reach a tenth of one core's peak.
            self.assertLess(trace["host"]["matmul_gflops"], 10)
            self.assertIn("the run measured torch's BLAS at", finding["detail"])
        else:
            self.assertNotEqual(verdict, "slow-cpu-matmul", trace["verdict"])
            self.assertFalse(any("reference BLAS" in f["title"] for f in trace["findings"]))

    def check_host(self, host, threads=1):
        """The host the run recorded, against this process's own reading (the same torch, machine and env);
        `threads`: what the script set (the test scripts run torch on one thread)."""
        self.assertEqual(host["threads"], threads)
        self.assertEqual(host["cpus"], len(os.sched_getaffinity(0)))
        self.assertIn(f"BLAS_INFO={host['blas_info']},", torch.__config__.show())
        if host["blas_info"] == "mkl":
            self.assertEqual(host["blas"], "MKL")
        elif host["blas_info"] == "generic":  # the system libblas.so.3, named by its folder
            with open("/proc/self/maps") as maps:
                paths = {os.path.realpath(line.split()[-1]) for line in maps if "libblas.so" in line}
            system = [p for p in paths if "site-packages" not in p]
            self.assertEqual(len(system), 1, paths)
            named = {"/blas/": "the reference BLAS (netlib)", "openblas": "OpenBLAS", "blis": "BLIS"}
            expected = next((v for k, v in named.items() if k in system[0]), "the system BLAS (libblas.so.3)")
            self.assertEqual(host["blas"], expected)
            self.assertIn(system[0], host["blas_libraries"])
        self.assertGreater(host["fp32_peak_gflops"] or 1, 0)
        # Measured after the trace: 512 x 512 fp32 products, a positive rate, within reach of the CPU's
        # ceiling where the run knew the clock (which counts AVX-512 at the AVX2 rate and a base clock:
        # a turbo AVX-512 core can do up to about twice it, never four times).
        self.assertEqual(host["matmul_size"], 512)
        self.assertGreater(host["matmul_gflops"], 0)
        if host["fp32_peak_gflops"]:
            self.assertLess(host["matmul_gflops"], host["fp32_peak_gflops"] * 4)

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
        # A port free now, not a fixed one: the suite runs twice at once (torch 1.13 and 2.x), and a
        # fixed port made one run's ranks meet the other's.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        done, out = self.run_ferret("--steps", "3", "--json", "--", PYTHON, script("launch_two_ranks.py"), port,
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

    # Files ferret run writes in its folder never go through a link planted there (issue: hostile
    # input, pass two): report.json and the shim's .ferret-run.jsonl replace the link, the file it
    # pointed at is untouched.
    def test_links_planted_in_the_folder_are_replaced_not_followed(self):
        out = os.path.join(self.tmp, "mine")
        os.makedirs(out, mode=0o700)
        victims = {}
        for name in ("report.json", "trace.ferret-run.jsonl"):
            victim = os.path.join(self.tmp, "victim-" + name)
            with open(victim, "w") as f:
                f.write("precious\n")
            os.symlink(victim, os.path.join(out, name))
            victims[name] = victim
        done, out = self.run_ferret("--steps", "2", "--", PYTHON, script("slow_dataset.py"), "0", out=out)
        self.assertEqual(done.returncode, 0, done.stderr)
        for name, victim in victims.items():
            with open(victim) as f:
                self.assertEqual(f.read(), "precious\n", name)
            self.assertFalse(os.path.islink(os.path.join(out, name)), name)
        with open(os.path.join(out, "report.json")) as f:
            self.assertEqual(json.load(f)["schema"], "ferret.analysis/1")

    def test_a_folder_others_can_write_or_not_a_folder_is_refused(self):
        shared = os.path.join(self.tmp, "shared")
        os.makedirs(shared)
        os.chmod(shared, 0o777)
        done, _ = self.run_ferret("--", PYTHON, "-c", "pass", out=shared)
        self.assertEqual(done.returncode, 2)
        self.assertIn("others can write to the folder", done.stderr)
        link = os.path.join(self.tmp, "link")
        os.symlink(self.tmp, link)
        done, _ = self.run_ferret("--", PYTHON, "-c", "pass", out=link)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not a folder", done.stderr)

    def test_runs_started_together_get_a_folder_each_and_an_empty_one_is_removed(self):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        runs = [subprocess.Popen([FERRET, "run", "--steps", "2", "--json", "--", PYTHON, script("slow_dataset.py"), "0"],
                                 cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        outputs = [r.communicate(timeout=600) for r in runs]
        for r, (stdout, stderr) in zip(runs, outputs):
            self.assertEqual(r.returncode, 0, stderr)
            self.assertEqual(len(json.loads(stdout[stdout.index("{"):])["traces"]), 1)
        folders = sorted(d for d in os.listdir(self.tmp) if d.startswith("ferret-run-"))
        self.assertEqual(len(folders), 2, folders)
        for d in folders:
            self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, d))),
                             ["report.json", "trace.ferret-run.jsonl", "trace.trace.json.gz"])
        # A command that records nothing leaves no folder.
        done = subprocess.run([FERRET, "run", "--", PYTHON, "-c", "pass"], cwd=self.tmp, env=env,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(sorted(d for d in os.listdir(self.tmp) if d.startswith("ferret-run-")), folders)

    # TERM, HUP and INT sent to ferret run reach the command, which stops cleanly (the shim turns
    # TERM and HUP into SystemExit, so the trace of the steps recorded so far is written); ferret
    # waits for it, analyses what was recorded and exits 128 + N as the command did.
    def test_signals_to_ferret_reach_the_command_and_what_was_recorded_is_analysed(self):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            out = os.path.join(self.tmp, f"sig{int(sig)}")
            run = subprocess.Popen([FERRET, "run", "--out", out, "--steps", "1000", "--json", "--", PYTHON,
                                    script("endless_loop.py")],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            child = None
            for line in run.stdout:
                if line.startswith("pid "):
                    child = int(line.split()[1])
                if line.startswith("step 8"):  # recording began after step 1 (--wait 1)
                    break
            run.send_signal(sig)
            stdout, stderr = run.communicate(timeout=600)
            expected = 128 + int(sig)  # SIGINT too: an uncaught KeyboardInterrupt ends Python by SIGINT
            self.assertEqual(run.returncode, expected, f"{sig!r}: {stderr}")
            with self.assertRaises(ProcessLookupError, msg=f"{sig!r}: the command outlived ferret"):
                os.kill(child, 0)
            self.assertIn("{\n", stdout, f"{sig!r}: no report\n{stderr[-2000:]}")
            report = json.loads(stdout[stdout.index("{\n"):])
            self.assertGreaterEqual(report["traces"][0]["steps"]["count"], 5, f"{sig!r}")
            self.assertTrue(os.path.exists(os.path.join(out, "report.json")))


if __name__ == "__main__":
    unittest.main()
