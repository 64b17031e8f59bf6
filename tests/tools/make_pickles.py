"""Writes the pickles the pickle reader and `ferret memory` tests read, with Python's own pickle
module (the same one torch.cuda.memory._dump_snapshot() uses). Usage: make_pickles.py OUTDIR

values-pN.pickle      every plain type, protocols 2-5, with a shared (memoized) list
global-pN.pickle      an object needing a class lookup; global-pN.offset holds the byte offset of
                      the opcode the reader must refuse (from pickletools)
cycle.pickle          a list holding itself
snapshot-*.pickle     allocator snapshots shaped like each torch generation's _snapshot()
"""
import collections
import os
import pickle
import pickletools
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


shared = ["x", 7]
values = {
    "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**40, -2**40, 2**63 - 1, -2**63],
    "big": 2**70,
    "float": 1.5,
    "neg_float": -0.25,
    "bools": [True, False],
    "none": None,
    "text": "h\u00e9llo",
    "long_text": "y" * 300,
    "bytes": b"\x00\x01\xff",
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
    "nested": {"empty": {}, "list": [[], [[1]]]},
    "set": {3},
    "frozen": frozenset([4]),
    "shared_a": shared,
    "shared_b": shared,
}
for protocol in (2, 3, 4, 5):
    # Below protocol 4, sets pickle as a call to builtins.set (refused); below 3, bytes as one to
    # _codecs.encode. Torch's snapshots hold neither.
    v = {k: x for k, x in values.items() if not (protocol < 4 and k in ("set", "frozen")) and
         not (protocol < 3 and k == "bytes")}
    write(f"values-p{protocol}.pickle", pickle.dumps(v, protocol=protocol))
    data = pickle.dumps({"ok": 1, "bad": collections.OrderedDict(a=1)}, protocol=protocol)
    write(f"global-p{protocol}.pickle", data)
    offset = next(pos for op, arg, pos in pickletools.genops(data) if op.name in ("GLOBAL", "STACK_GLOBAL"))
    write(f"global-p{protocol}.offset", str(offset).encode())

cycle = []
cycle.append(cycle)
write("cycle.pickle", pickle.dumps(cycle, protocol=4))

MiB = 1 << 20
GiB = 1 << 30


def frames(fn, line, name):
    return [{"filename": "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", "line": 114, "name": "forward"},
            {"filename": fn, "line": line, "name": name}]


def block(addr, size, state, requested=None, where=None):
    b = {"address": addr, "size": size, "state": state, "frames": where or []}
    if requested is not None:
        b["requested_size"] = requested
    return b


# torch 2.x: a fragmented device 0. Segment A (2 GiB): four 256 MiB blocks in use, 1 GiB free in
# four 256 MiB pieces between them. Segment B (1 GiB): one 100 MiB block in use, 924 MiB free.
# Reserved 3 GiB, allocated 1124 MiB, free 1948 MiB in 5 blocks, largest 924 MiB.
a = 0x7f0000000000
seg_a_blocks = []
for k in range(8):
    state = "active_allocated" if k % 2 == 0 else "inactive"
    seg_a_blocks.append(block(a + k * 256 * MiB, 256 * MiB, state, 256 * MiB - 1000 if state != "inactive" else 0,
                              frames("train.py", 40 + k, "step") if state != "inactive" else []))
b = 0x7f1000000000
seg_b_blocks = [block(b, 100 * MiB, "active_allocated", 100 * MiB - 24, frames("model.py", 9, "cache")),
                block(b + 100 * MiB, 924 * MiB, "inactive")]
fragmented = {
    "segments": [
        {"device": 0, "address": a, "total_size": 2 * GiB, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "allocated_size": 1 * GiB, "active_size": 1 * GiB, "requested_size": 1 * GiB - 4000,
         "blocks": seg_a_blocks},
        {"device": 0, "address": b, "total_size": 1 * GiB, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "allocated_size": 100 * MiB, "active_size": 100 * MiB,
         "requested_size": 100 * MiB - 24, "blocks": seg_b_blocks},
        # A CUDA graph's private pool on device 1: 2 MiB small segment, one pending free block.
        {"device": 1, "address": 0x7e0000000000, "total_size": 2 * MiB, "stream": 5, "segment_type": "small",
         "segment_pool_id": (1, 3), "allocated_size": 0, "active_size": 512,
         "blocks": [block(0x7e0000000000, 512, "active_pending_free", 500), block(0x7e0000000200, 2 * MiB - 512, "inactive")]},
    ],
    "device_traces": [[], []],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False},
}
for protocol in (2, 4, 5):
    write(f"snapshot-fragmented-p{protocol}.pickle", pickle.dumps(fragmented, protocol=protocol))

# An OOM the cache could have served: device 0 ends with 1 GiB reserved, 200 MiB allocated. The
# trace (oldest first): segment_alloc 1 GiB, alloc 600 MiB, alloc 200 MiB, free 600 MiB, oom of
# 700 MiB (cached free then 824 MiB >= 700 MiB: fragmentation), then nothing else.
oom_frag = {
    "segments": [{"device": 0, "address": a, "total_size": 1 * GiB, "stream": 0, "segment_type": "large",
                  "segment_pool_id": (0, 0),
                  "blocks": [block(a, 300 * MiB, "inactive"), block(a + 300 * MiB, 200 * MiB, "active_allocated", 200 * MiB),
                             block(a + 500 * MiB, 524 * MiB, "inactive")]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": a, "size": 1 * GiB, "stream": 0, "frames": []},
        {"action": "alloc", "addr": a, "size": 600 * MiB, "stream": 0, "frames": frames("train.py", 10, "forward")},
        {"action": "alloc", "addr": a + 600 * MiB, "size": 200 * MiB, "stream": 0, "frames": []},
        {"action": "free_requested", "addr": a, "size": 600 * MiB, "stream": 0, "frames": []},
        {"action": "free_completed", "addr": a, "size": 600 * MiB, "stream": 0, "frames": []},
        {"action": "oom", "addr": 0, "size": 700 * MiB, "stream": 0, "device_free": 50 * MiB,
         "frames": frames("train.py", 77, "forward")},
    ]],
}
write("snapshot-oom-fragmentation.pickle", pickle.dumps(oom_frag, protocol=4))

# An OOM that needs less memory: 4 GiB reserved, all allocated; a 2 GiB request fails.
oom_cap = {
    "segments": [{"device": 0, "address": a, "total_size": 4 * GiB, "stream": 0, "segment_type": "large",
                  "blocks": [block(a, 4 * GiB, "active_allocated")]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": a, "size": 4 * GiB, "stream": 0, "frames": []},
        {"action": "alloc", "addr": a, "size": 4 * GiB, "stream": 0, "frames": []},
        {"action": "oom", "addr": 0, "size": 2 * GiB, "stream": 0, "device_free": 10 * MiB, "frames": []},
    ]],
}
write("snapshot-oom-capacity.pickle", pickle.dumps(oom_cap, protocol=3))

# torch 1.13: no requested_size, frames in a per-block history, no device_traces or settings.
old = {
    "segments": [{"device": 0, "address": a, "total_size": 20 * MiB, "stream": 0, "segment_type": "large",
                  "allocated_size": 8 * MiB, "active_size": 8 * MiB,
                  "blocks": [{"size": 8 * MiB, "state": "active_allocated",
                              "history": [{"addr": a, "real_size": 8 * MiB, "frames": frames("old.py", 3, "main")}]},
                             {"size": 12 * MiB, "state": "inactive", "history": []}]}],
}
write("snapshot-1.13.pickle", pickle.dumps(old, protocol=2))

# Churn: 100 allocations, each with a segment_alloc and a segment_free (empty_cache every step).
churn_trace = []
for k in range(100):
    churn_trace += [{"action": "segment_alloc", "addr": a, "size": 2 * MiB, "stream": 0, "frames": []},
                    {"action": "alloc", "addr": a, "size": 2 * MiB, "stream": 0, "frames": []},
                    {"action": "free_completed", "addr": a, "size": 2 * MiB, "stream": 0, "frames": []},
                    {"action": "segment_free", "addr": a, "size": 2 * MiB, "stream": 0, "frames": []}]
churn = {"segments": [], "device_traces": [churn_trace]}
write("snapshot-churn.pickle", pickle.dumps(churn, protocol=4))

# Fragmented at the snapshot, not at the peak: the state of `fragmented` (device 0: 3 GiB reserved,
# 1124 MiB active) after a step whose trace allocated 1848 MiB and freed it again. Walked back, the
# peak held 2972 MiB active in the same 3 GiB: 100 MiB free (3.3%), so the 1948 MiB free at the
# snapshot is the step's blocks cached for the next one, not fragmentation.
after_peak = dict(fragmented)
after_peak["device_traces"] = [[
    {"action": "alloc", "addr": a + 256 * MiB, "size": 1848 * MiB, "stream": 0, "frames": frames("train.py", 50, "step")},
    {"action": "free_requested", "addr": a + 256 * MiB, "size": 1848 * MiB, "stream": 0, "frames": []},
    {"action": "free_completed", "addr": a + 256 * MiB, "size": 1848 * MiB, "stream": 0, "frames": []},
], []]
write("snapshot-fragmented-after-peak.pickle", pickle.dumps(after_peak, protocol=4))

# Growth: a first pass that only filled the cache. 12 segments of 20 MiB, each cudaMalloc'd for one
# 20 MiB allocation and none freed: 8 asked for by train.py:12 in build_model (160 MiB), 4 by
# data.py:30 in load (80 MiB). Each stack starts in the recording's machinery (the traceback
# gatherer's and the allocator's C++ frames, a frame with no file), then torch's own Python, then
# the user's frame; the segment entries carry no frames (the allocation after each one names it).
machinery = [{"filename": "/pytorch/torch/csrc/profiler/combined_traceback.cpp", "line": 20,
              "name": "torch::CapturedTraceback::gather"},
             {"filename": "??", "line": 0, "name": "gather_with_cpp"},
             {"filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 1200,
              "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"},
             {"filename": "/pytorch/torch/csrc/cuda/memory_snapshot.cpp", "line": 90, "name": "gather"}]
torch_python = [{"filename": "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "line": 1527,
                 "name": "_call_impl"}] * 5
growth_segments, growth_trace = [], []
for k in range(12):
    addr = a + k * 20 * MiB
    user = ("train.py", 12, "build_model") if k < 8 else ("data.py", 30, "load")
    stack = machinery + torch_python + [{"filename": user[0], "line": user[1], "name": user[2]}]
    growth_segments.append({"device": 0, "address": addr, "total_size": 20 * MiB, "stream": 0,
                            "segment_type": "large", "segment_pool_id": (0, 0),
                            "blocks": [block(addr, 20 * MiB, "active_allocated", 20 * MiB, stack)]})
    growth_trace += [{"action": "segment_alloc", "addr": addr, "size": 20 * MiB, "stream": 0, "frames": []},
                     {"action": "alloc", "addr": addr, "size": 20 * MiB, "stream": 0, "frames": stack}]
growth = {"segments": growth_segments, "device_traces": [growth_trace]}
write("snapshot-growth.pickle", pickle.dumps(growth, protocol=4))
