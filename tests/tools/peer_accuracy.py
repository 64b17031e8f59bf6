"""Runs HolisticTraceAnalysis (HTA) and ferret side by side on every trace given and prints one table:
HTA's temporal breakdown (idle, compute, non-compute % of the GPU span) and its communication /
computation overlap beside ferret's figures under HTA's definition (`--timeline-definition hta`),
with the difference. `--peer plugin` adds the TensorBoard profiler plugin's step breakdown and GPU
metrics beside ferret's own (not gated yet: docs/PEERS.md says why). A difference beyond the tolerance (0.5 point) fails unless docs/PEERS.md lists
that trace and metric with the reason ferret differs. Where HTA crashes or refuses a trace, the table
says so. Run with the test environment's interpreter (HTA pinned in python/requirements-torch2.txt):

    build/venv/bin/python tests/tools/peer_accuracy.py --ferret build/ferret [--peers-doc docs/PEERS.md] TRACE...

Exit status: 0 when every difference is within the tolerance or documented, 1 otherwise, 2 when
HTA cannot be imported.
"""
import argparse
import contextlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

TOLERANCE = 0.5  # percentage points: HTA rounds each event to whole microseconds
METRICS = ("idle_pct", "compute_pct", "non_compute_pct", "comm_comp_overlap_pct")


def hta_figures(path):
    """HTA's figures for one trace, or a string saying why there are none."""
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory(prefix="ferret-hta-") as folder:
        # HTA reads every trace in a folder as one rank of a job: give it this one alone.
        os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
        quiet = io.StringIO()
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                warnings.simplefilter("ignore")
                analysis = TraceAnalysis(trace_dir=folder)
                breakdown = analysis.get_temporal_breakdown(visualize=False)
                overlap = analysis.get_comm_comp_overlap(visualize=False)
        except Exception as e:  # noqa: BLE001 - any failure of the peer is reported, not raised
            return f"HTA failed: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    if breakdown is None or len(breakdown) == 0:
        return "HTA gave no breakdown"
    row = breakdown.iloc[0]
    out = {"idle_pct": float(row["idle_time_pctg"]), "compute_pct": float(row["compute_time_pctg"]),
           "non_compute_pct": float(row["non_compute_time_pctg"]), "comm_comp_overlap_pct": None}
    if overlap is not None and len(overlap) > 0:
        value = float(overlap.iloc[0]["comp_comm_overlap_pctg"])
        out["comm_comp_overlap_pct"] = None if math.isnan(value) else value
    return out


# The TensorBoard profiler plugin's step breakdown roles, as ferret's JSON names them.
TBP_ROLES = (("Kernel", "kernel"), ("Memcpy", "memcpy"), ("Memset", "memset"), ("Communication", "communication"),
             ("Runtime", "runtime"), ("DataLoader", "dataloader"), ("CpuOp", "cpu_exec"), ("Other", "other"))


def tbp_figures(path):
    """The plugin's step breakdown (each role's share of the mean step, %) and per-GPU utilisation,
    estimated SM efficiency, achieved occupancy and Tensor Core share (%), or why there are none."""
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole
    quiet = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="ferret-tbp-") as cache:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                warnings.simplefilter("ignore")
                profile = RunProfileData.parse("ferret", None, os.path.abspath(path), cache)
        except Exception as e:  # noqa: BLE001
            return f"plugin failed: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    if profile.avg_costs is None:
        return "plugin gave no step breakdown"
    costs = profile.avg_costs.costs
    total = costs[ProfileRole.Total]
    out = {}
    if total > 0:
        for role, key in TBP_ROLES:
            out[f"step_{key}_pct"] = 100 * costs[getattr(ProfileRole, role)] / total
    gpu = profile.gpu_metrics_parser
    for d, value in enumerate(gpu.gpu_utilization if gpu else []):
        if value is None:
            continue
        out[f"gpu{d}_utilization_pct"] = 100 * value
        sm = gpu.avg_approximated_sm_efficiency_per_device[d]
        out[f"gpu{d}_sm_efficiency_pct"] = None if sm is None else 100 * sm
        out[f"gpu{d}_achieved_occupancy_pct"] = gpu.avg_occupancy_per_device[d]
        tc = profile.tc_ratio[d] if profile.tc_ratio else None
        out[f"gpu{d}_tensor_core_pct"] = None if tc is None else 100 * tc
    return out


def ferret_json(ferret, path, *options):
    done = subprocess.run([ferret, "analyze", "--json", *options, path], capture_output=True, text=True)
    if done.returncode != 0:
        return f"ferret failed ({done.returncode}): {done.stderr.strip().splitlines()[-1][:80]}"
    return json.loads(done.stdout)["traces"][0]


def ferret_figures(ferret, path):
    trace = ferret_json(ferret, path, "--timeline-definition", "hta")
    if isinstance(trace, str):
        return trace
    temporal = trace.get("temporal")
    if not temporal:
        return "no GPU timeline"
    return {m: temporal.get(m) for m in METRICS}


def ferret_tbp_figures(ferret, path):
    """ferret's own figures (its default definition follows the plugin's step rules) named as
    tbp_figures names the plugin's."""
    trace = ferret_json(ferret, path)
    if isinstance(trace, str):
        return trace
    out = {}
    breakdown = trace.get("breakdown_us") or {}
    total = sum(breakdown.values())
    if total > 0:
        for _, key in TBP_ROLES:
            out[f"step_{key}_pct"] = 100 * breakdown.get(key, 0) / total
    for g in trace.get("gpus") or []:
        d = g["device"]
        for key in ("utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct"):
            out[f"gpu{d}_{key}"] = g.get(key)
    return out


def documented(peers_doc):
    """(trace, metric) pairs docs/PEERS.md lists as deliberate differences: its table rows
    `| trace | metric | ... |` with backquoted trace and metric names."""
    rows = set()
    if peers_doc and os.path.exists(peers_doc):
        with open(peers_doc) as f:
            for line in f:
                m = re.match(r"\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|", line)
                if m:
                    rows.add((m.group(1), m.group(2)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferret", required=True)
    ap.add_argument("--peers-doc")
    ap.add_argument("--peer", choices=("hta", "plugin"), action="append",
                    help="which peers to run (repeatable; default: hta, the gated one)")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    try:
        import hta  # noqa: F401
        import torch_tb_profiler  # noqa: F401
    except ImportError as e:
        print(f"peer_accuracy: a peer is not importable ({e}); run it with build/venv/bin/python")
        return 2
    allowed = documented(args.peers_doc)
    failures, compared = 0, 0
    print(f"{'trace':44} {'peer':6} {'metric':26} {'peer':>8} {'ferret':>8} {'diff':>7}  status")
    for path in sorted(args.traces):
        name = os.path.basename(path)
        peers = args.peer or ["hta"]
        sides = []
        if "hta" in peers:
            sides.append(("HTA", hta_figures(path), ferret_figures(args.ferret, path)))
        if "plugin" in peers:
            sides.append(("plugin", tbp_figures(path), ferret_tbp_figures(args.ferret, path)))
        for peer_name, peer, own in sides:
            if isinstance(peer, str) or isinstance(own, str):
                why = " / ".join(x for x in (peer, own) if isinstance(x, str))
                print(f"{name:44} {peer_name:6} {'-':26} {'-':>8} {'-':>8} {'-':>7}  {why}")
                continue
            for metric in sorted(set(peer) | set(own)):
                a, b = peer.get(metric), own.get(metric)
                if a is None and b is None:
                    continue
                if a is None or b is None:
                    status = "documented" if (name, metric) in allowed else "FAIL: one side has no value"
                    failures += status.startswith("FAIL")
                    print(f"{name:44} {peer_name:6} {metric:26} {'-' if a is None else f'{a:8.2f}':>8} "
                          f"{'-' if b is None else f'{b:8.2f}':>8} {'-':>7}  {status}")
                    continue
                compared += 1
                diff = b - a
                status = "ok" if abs(diff) <= TOLERANCE else ("documented" if (name, metric) in allowed else "FAIL")
                failures += status == "FAIL"
                print(f"{name:44} {peer_name:6} {metric:26} {a:8.2f} {b:8.2f} {diff:+7.2f}  {status}")
    print(f"{compared} figures compared, {failures} beyond {TOLERANCE} point and not documented in "
          f"{args.peers_doc or '(no document)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
