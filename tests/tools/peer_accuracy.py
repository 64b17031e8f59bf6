"""Runs HolisticTraceAnalysis (HTA) and ferret side by side on every trace given and prints one table:
HTA's temporal breakdown (idle, compute, non-compute % of the GPU span) and its communication /
computation overlap beside ferret's figures under HTA's definition (`--timeline-definition hta`),
with the difference. A difference beyond the tolerance (0.5 point) fails unless docs/PEERS.md lists
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


def ferret_figures(ferret, path):
    done = subprocess.run([ferret, "analyze", "--json", "--timeline-definition", "hta", path], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return f"ferret failed ({done.returncode}): {done.stderr.strip().splitlines()[-1][:80]}"
    temporal = json.loads(done.stdout)["traces"][0].get("temporal")
    if not temporal:
        return "no GPU timeline"
    return {m: temporal.get(m) for m in METRICS}


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
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    try:
        import hta  # noqa: F401
    except ImportError as e:
        print(f"peer_accuracy: HolisticTraceAnalysis is not importable ({e}); run it with build/venv/bin/python")
        return 2
    allowed = documented(args.peers_doc)
    failures, compared = 0, 0
    print(f"{'trace':44} {'metric':22} {'HTA':>8} {'ferret':>8} {'diff':>7}  status")
    for path in sorted(args.traces):
        name = os.path.basename(path)
        peer, own = hta_figures(path), ferret_figures(args.ferret, path)
        if isinstance(peer, str) or isinstance(own, str):
            print(f"{name:44} {'-':22} {'-':>8} {'-':>8} {'-':>7}  "
                  f"{peer if isinstance(peer, str) else ''}{' / ' if isinstance(peer, str) and isinstance(own, str) else ''}"
                  f"{own if isinstance(own, str) else ''}")
            continue
        for metric in METRICS:
            a, b = peer[metric], own[metric]
            if a is None and b is None:
                continue
            if a is None or b is None:
                status = "documented" if (name, metric) in allowed else "FAIL: one side has no value"
                failures += status.startswith("FAIL")
                print(f"{name:44} {metric:22} {'-' if a is None else f'{a:8.2f}':>8} "
                      f"{'-' if b is None else f'{b:8.2f}':>8} {'-':>7}  {status}")
                continue
            compared += 1
            diff = b - a
            status = "ok" if abs(diff) <= TOLERANCE else ("documented" if (name, metric) in allowed else "FAIL")
            failures += status == "FAIL"
            print(f"{name:44} {metric:22} {a:8.2f} {b:8.2f} {diff:+7.2f}  {status}")
    print(f"{compared} figures compared, {failures} beyond {TOLERANCE} point and not documented in "
          f"{args.peers_doc or '(no document)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
