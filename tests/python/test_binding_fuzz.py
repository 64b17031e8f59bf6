"""No input from Python may crash the interpreter: a seeded property test over the binding's entry
points (the ferret package and _ferret directly). Each call either returns or raises a Python
exception; the calls run in a child interpreter, so that a crash (a stack overflow in a recursive
walk, say) fails this test with its signal instead of taking the test runner down."""
import os
import subprocess
import sys
import unittest

from ferret_test_env import TempDirTest, example

CHILD = r'''
import json, os, random, sys
import ferret
from ferret import _ferret

rng = random.Random(int(sys.argv[1]))
tmp = sys.argv[2]
trace = sys.argv[3]
calls = int(sys.argv[4])


def nested(depth, opener, closer):
    return opener * depth + closer * depth


def json_text():
    kind = rng.randrange(8)
    if kind == 0:
        return nested(rng.choice([1, 100, 129, 5000, 40000, 200000]), "[", "]")
    if kind == 1:
        d = rng.choice([127, 128, 129, 40000])
        return '{"a":' * d + "1" + "}" * d
    if kind == 2:
        return "[" * rng.randrange(1, 50000)  # unbalanced
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200))).decode("latin-1")
    if kind == 4:
        return json.dumps({"schema": "ferret.analysis/1", "traces": [{"findings": [{"id": "\x1b[31m<script>"}]}]})
    if kind == 5:
        return '"' + "\\" * rng.randrange(10) + '[[[[' + '"' + "]" * 3
    if kind == 6:
        return json.dumps([list(range(rng.randrange(2000)))])
    return ""


def deep_python(depth):
    root = current = []
    for _ in range(depth):
        current.append([])
        current = current[0]
    return root


def path():
    kind = rng.randrange(7)
    if kind == 0:
        return trace
    if kind == 1:
        return trace + "\x00junk"
    if kind == 2:
        return trace.encode()
    if kind == 3:
        p = os.path.join(tmp, "garbage-%d.json" % rng.randrange(1000))
        with open(p, "wb") as f:
            f.write(json_text().encode("utf-8", "surrogatepass"))
        return p
    if kind == 4:
        return os.path.join(tmp, "missing.json")
    if kind == 5:
        return rng.choice([42, None, 3.5, ["x"], b"\xff\xfe"])
    return tmp  # a folder with no traces


def call():
    which = rng.randrange(7)
    if which == 0:
        _ferret.html_page(json_text(), json_text()[:100])
    elif which == 1:
        ferret.report(rng.choice([deep_python(rng.choice([10, 200, 5000, 40000])), {"a": json_text()}, json_text()]),
                      rng.choice(["html", "json", "text", "md", "pdf"]))
    elif which == 2:
        ferret.analyze(path(), top=rng.choice([1, 10, 0, -1]), steps=rng.choice([None, "1-2", "x", (3, None)]))
    elif which == 3:
        ferret.diff(path(), path(), fail_if_slower=rng.choice([None, 5, float("nan"), -1, float("inf"), "x"]))
    elif which == 4:
        ferret.load(path())
    elif which == 5:
        ferret.analyze(trace, dataloaders=rng.choice([[{"num_workers": -1}], [deep_python(100)], [{"batch_size": 1e300}],
                                                      [{"pin_memory": "yes"}], [json_text()]]))
    else:
        _ferret.analyze(paths=[json_text()], top=1, steps="", window="", time="", device=-1, hta_timeline=False,
                        threads=0, max_memory="", dataloaders=json_text())


raised = returned = 0
for _ in range(calls):
    try:
        call()
        returned += 1
    except Exception:
        raised += 1
print(f"{returned} returned, {raised} raised")
'''


class BindingFuzz(TempDirTest):
    def test_no_input_from_python_crashes_the_interpreter(self):
        for seed in (1, 2, 3):
            done = subprocess.run([sys.executable, "-c", CHILD, str(seed), self.tmp, example("cpu-input-bound.json.gz"),
                                   "300"], capture_output=True, text=True, timeout=600)
            self.assertEqual(done.returncode, 0, f"seed {seed}: exit {done.returncode}\n{done.stderr[-3000:]}")
            returned, raised = (int(w) for w in done.stdout.split()[0:3:2])
            self.assertEqual(returned + raised, 300)
            self.assertGreater(returned, 0, done.stdout)
            self.assertGreater(raised, 0, done.stdout)


if __name__ == "__main__":
    unittest.main()
