#!/usr/bin/env python3
"""Independent reference numbers for the trace corpus (../shared/corpus).

Reads every trace with nothing but the standard library (json + gzip; numbers parsed as
decimal.Decimal so 19-digit timestamps stay exact) and writes tests/data/corpus_counts.json,
which tests/ingest/corpus_test.cpp compares with ferret's model. The C++ test needs only the
JSON file; run this script again when the corpus changes:

    /usr/bin/python3 tests/tools/corpus_counts.py [CORPUS_DIR] [OUTPUT]

Event kinds follow the category table of the reference tools' definitions section 2 (written here from the spec, not
from ferret's code):
  'X' spans by "cat":  cpu_op / Operator -> cpu_op, user_annotation, gpu_user_annotation,
    python_function, cuda_runtime / Runtime -> cuda_runtime, cuda_driver,
    kernel / Kernel -> kernel, gpu_memcpy / Memcpy -> memcpy, gpu_memset / Memset -> memset,
    cuda_sync -> sync, cuda_event -> cuda_event, overhead; no "cat" at all (legacy autograd export) -> cpu_op;
    anything else (e.g. "Trace", "cuda_profiler_range") -> other.
  'i' instants named "[memory]" -> memory_instant, other instants -> instant;
  's' -> flow_start, 'f' -> flow_end, 'M' -> metadata, 'C' -> counter.
Events other than 'M' without "ts" are not stored (counted under skipped_no_ts).
"""
import collections
import decimal
import glob
import gzip
import json
import os
import re
import sys

SPAN_KIND = {
    "cpu_op": "cpu_op", "Operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "python_function": "python_function",
    "cuda_runtime": "cuda_runtime", "Runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver",
    "kernel": "kernel", "Kernel": "kernel",
    "mtia_ccp_events": "kernel",  # MTIA: work on the device's command processors (but MTIA_KIND)
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "cuda_sync": "sync",
    "cuda_event": "cuda_event",
    "overhead": "overhead",
}
# MTIA's command-processor activities by name: a stream's event wait is a device-side wait, a DMA
# request a copy, an event record an event (HTA counts the first two as non-compute).
MTIA_KIND = {"event_wait": "sync", "dma_request": "memcpy", "event_record": "cuda_event"}
GPU_KINDS = {"kernel", "memcpy", "memset", "sync", "cuda_event", "gpu_user_annotation"}
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def kind_of(e):
    ph = e.get("ph")
    if ph == "X":
        if "cat" not in e:
            return "cpu_op"
        cat = e["cat"]
        if cat == "mtia_ccp_events":
            name = e.get("name")
            if isinstance(name, str) and name.startswith("dma_"):
                return "memcpy"
            return MTIA_KIND.get(name, "kernel")
        if cat in SPAN_KIND:
            return SPAN_KIND[cat]
        # Other back ends name their API calls "<backend>_runtime" / "<backend>_driver" (mtia_runtime).
        if isinstance(cat, str) and cat.endswith("_runtime"):
            return "cuda_runtime"
        if isinstance(cat, str) and cat.endswith("_driver"):
            return "cuda_driver"
        return "other"
    if ph in ("i", "I", "n"):
        return "memory_instant" if e.get("name") == "[memory]" else "instant"
    return {"s": "flow_start", "f": "flow_end", "t": "flow_end", "M": "metadata", "C": "counter"}.get(ph, "other")


def micros_to_ns(v):
    # Exact: Decimal (or int) microseconds times 1000.
    return int(decimal.Decimal(v) * 1000)


def stream_id(v):
    # GPU tids are CUDA streams: 7, "7" or "stream 7" all name stream 7.
    if isinstance(v, str):
        s = v[7:] if v.startswith("stream ") else v
        return int(s) if s.isdigit() else v
    return v


def describe(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        doc = json.load(fh, parse_float=decimal.Decimal)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    header = {} if isinstance(doc, list) else doc
    by_ph = collections.Counter(str(e.get("ph")) for e in events)
    kinds = collections.Counter()
    skipped_no_ts = 0
    steps = []
    first = last = None
    streams = set()
    for e in events:
        if e.get("ph") != "M" and "ts" not in e:
            skipped_no_ts += 1
            continue
        k = kind_of(e)
        kinds[k] += 1
        if e.get("ph") == "X" and k not in GPU_KINDS:
            m = STEP_RE.match(str(e.get("name", "")))
            if m:
                steps.append(int(m.group(1)))
        if k in GPU_KINDS:
            streams.add((e.get("pid"), stream_id(e.get("tid"))))
        if e.get("ph") == "M":
            continue
        start = micros_to_ns(e["ts"])
        end = start + (micros_to_ns(e.get("dur", 0)) if e.get("ph") == "X" else 0)
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    devices = header.get("deviceProperties", header.get("computeProperties", []))
    dist = header.get("distributedInfo")
    out = {
        "events": len(events),
        "by_ph": dict(sorted(by_ph.items())),
        "kinds": dict(sorted(kinds.items())),
        "kernels": sum(1 for e in events if e.get("ph") == "X" and kind_of(e) == "kernel"),
        "skipped_no_ts": skipped_no_ts,
        "profiler_steps": len(steps),
        "step_numbers": sorted(steps),
        "devices": len(devices),
        "device_names": [str(d.get("name", "")) for d in devices],
        "device_num_sms": [int(d["numSms"]) if "numSms" in d else -1 for d in devices],
        "distributed": None if not isinstance(dist, dict) else {
            "rank": int(dist.get("rank", -1)),
            "world_size": int(dist.get("world_size", -1)),
        },
        "base_time_ns": int(header["baseTimeNanoseconds"]) if "baseTimeNanoseconds" in header else None,
        "span_first_ns": first,
        "span_last_ns": last,
        "gpu_streams": len(streams),
    }
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "corpus")
    output = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "data", "corpus_counts.json")
    names = sorted(glob.glob(os.path.join(corpus, "*.json")) + glob.glob(os.path.join(corpus, "*.json.gz")) +
                   glob.glob(os.path.join(corpus, "diff-pair", "*.json.gz")) +
                   glob.glob(os.path.join(corpus, "ranks-128job", "*.json.gz")))
    result = {}
    for path in names:
        rel = os.path.relpath(path, corpus)
        result[rel] = describe(path)
        print(f"{rel}: {result[rel]['events']} events", file=sys.stderr)
    with open(output, "w") as fh:
        json.dump({"generated_by": "tests/tools/corpus_counts.py", "files": result}, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
