"""The --html page opened in headless Chromium: the DOM its script drew is read back and checked
against the JSON document of the same run (numbers, order, sections), the console stays silent,
nothing is fetched, trace text stays text, and a screenshot is not blank.

CTest runs it when `chromium` is installed (make setup installs it), with FERRET_BINARY set."""
import gzip
import html.parser
import json
import os
import struct
import subprocess
import tempfile
import unittest
import zlib

FERRET = os.environ.get("FERRET_BINARY", "ferret")
SOURCE = os.environ.get("FERRET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHROMIUM = os.environ.get("FERRET_CHROMIUM", "chromium")
EXAMPLES = os.path.join(SOURCE, "examples", "traces")


def ferret(*args, check=True):
    done = subprocess.run([FERRET, *args], capture_output=True, text=True)
    if check and done.returncode not in (0, 1, 3):
        raise AssertionError(f"ferret {' '.join(args)}: {done.returncode} {done.stderr}")
    return done


def chromium(page, *extra):
    """Runs headless Chromium on a local page; returns (stdout, console lines)."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra,
                               "file://" + os.path.abspath(page)], capture_output=True, timeout=120)
    console = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if ":CONSOLE" in line]
    return done.stdout.decode("utf-8", "replace"), console


class Dom(html.parser.HTMLParser):
    """The rendered DOM as a list of elements (tag, attributes, text inside)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.stack = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(e)
        if tag not in ("meta", "input", "br", "img", "link", "rect", "path", "line"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack:
            e = self.stack.pop()
            if e["tag"] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

    def by_class(self, name):
        return [e for e in self.elements if name in e["attrs"].get("class", "").split()]

    def by_id(self, ident):
        return next((e for e in self.elements if e["attrs"].get("id") == ident), None)

    def tags(self, tag):
        return [e for e in self.elements if e["tag"] == tag]


def png_is_blank(path):
    """True when every row of the PNG is the same: nothing was drawn."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 4
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            bpp = {2: 3, 6: 4, 0: 1, 4: 2}.get(color, 4) * max(1, depth // 8)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, pos = set(), bytearray(stride), 0
    for _ in range(height):  # undo the per-row filters (PNG spec, section 9)
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p_ = a + b - c
                pa, pb, pc = abs(p_ - a), abs(p_ - b), abs(p_ - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.add(bytes(line))
        prev = line
    return len(rows) <= 1


@unittest.skipIf(subprocess.run(["sh", "-c", f"command -v {CHROMIUM}"], capture_output=True).returncode != 0,
                 "SKIPPED: no chromium (make setup installs it)")
class HtmlInTheBrowser(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ferret-html-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def page_and_json(self, *args):
        page = os.path.join(self.tmp, "report.html")
        doc = json.loads(ferret(*args[:1], "--json", "--html", page, *args[1:]).stdout)
        dom_text, console = chromium(page, "--dump-dom")
        return page, doc, Dom(dom_text), console

    def check_common(self, page, dom, console):
        body = dom.tags("body")[0]
        self.assertEqual(body["attrs"].get("data-rendered"), "1", "the script did not finish drawing")
        self.assertEqual(body["attrs"].get("data-resources"), "0", "the page fetched something")
        self.assertEqual(console, [], "the console must stay silent")
        with open(page, encoding="utf-8") as f:
            source = f.read()
        self.assertIn('http-equiv="Content-Security-Policy" content="default-src \'none\'', source)
        self.assertNotIn("src=\"http", source)
        self.assertLess(len(source), 2 * 1024 * 1024)

    def test_analysis_pages_show_the_documents_numbers(self):
        for name in sorted(os.listdir(EXAMPLES)):
            with self.subTest(trace=name):
                page, doc, dom, console = self.page_and_json("analyze", os.path.join(EXAMPLES, name))
                self.check_common(page, dom, console)
                trace = doc["traces"][0]
                self.assertEqual(dom.by_id("verdict")["text"], trace["verdict"]["headline"])
                cards = dom.by_class("finding")
                self.assertEqual([c["attrs"]["data-id"] for c in cards], [f["id"] for f in trace["findings"]])
                self.assertEqual([float(c["attrs"]["data-max-speedup"]) for c in cards],
                                 [f["max_speedup"] for f in trace["findings"]])
                copies = dom.by_class("copy")
                self.assertEqual(len(copies), sum(len(f["fixes"]) for f in trace["findings"]))
                # One bar segment per step and non-zero category, each with the document's microseconds.
                rects = [e for e in dom.tags("rect") if "data-category" in e["attrs"]]
                expected = [(c, v) for s in trace["steps"]["list"] for c, v in s["breakdown_us"].items() if v > 0]
                self.assertEqual(sorted((r["attrs"]["data-category"], float(r["attrs"]["data-us"])) for r in rects),
                                 sorted(expected))
                # The operator table: every row of the document, in its order, with its exact numbers.
                ops_table = next(e for e in dom.tags("table") if "ops" in e["attrs"].get("class", ""))
                hot = trace["hot_spots"]
                rows = hot["ops_by_device"] if any(r["device_self_us"] > 0 for r in hot["ops_by_device"]) else hot["ops_by_host"]
                self.assertEqual(int(ops_table["attrs"]["data-rows"]), len(rows))
                cells = [float(e["attrs"]["data-value"]) for e in dom.tags("td") if "data-value" in e["attrs"]]
                for r in rows[:5]:
                    self.assertIn(r["host_self_us"], cells)
                # The GPU activity curve: one line per device, every bucket of the document drawn.
                lines = [e for e in dom.tags("polyline") if e["attrs"].get("data-series") == "busy %"]
                curves = trace["temporal"]["busy_curves"]
                self.assertEqual([int(e["attrs"]["data-points"]) for e in lines], [len(c["busy_pct"]) for c in curves])
                if curves:
                    self.assertTrue(dom.by_id("timeline"))
                # Findings marked where they happen: under each device's curve, one lane per finding that
                # says where (the first six), one mark per place inside the curve's span.
                lanes = [f for f in trace["findings"] if f["where"]["spans_us"]][:6]
                marks = [e["attrs"]["data-finding-id"] for e in dom.by_class("finding-mark")]
                expected = []
                for c in curves:
                    end = c["start_us"] + c["bucket_us"] * len(c["busy_pct"])
                    for f in lanes:
                        expected += [f["id"] for s, d in f["where"]["spans_us"] if s + d >= c["start_us"] and s <= end]
                self.assertEqual(sorted(marks), sorted(expected))
                if curves and any(f["id"] in ("input-bound", "host-sync", "launch-bound") for f in trace["findings"]):
                    self.assertTrue(marks, "a stall finding is marked on the timeline")

    def test_the_memory_curve(self):
        events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                   "ts": i * 100, "dur": 100} for i in range(3)]
        totals = [(10, 4000, 6000), (40, 9000, 12000), (120, 2000, 12000), (250, 5000, 8000)]
        events += [{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "s": "t",
                    "args": {"Device Type": 1, "Device Id": 0, "Addr": n, "Bytes": 100, "Total Allocated": a,
                             "Total Reserved": r}} for n, (ts, a, r) in enumerate(totals)]
        events += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": i * 100 + 1, "dur": 90}
                   for i in range(3)]
        path = os.path.join(self.tmp, "memory.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        page, doc, dom, console = self.page_and_json("analyze", path)
        self.check_common(page, dom, console)
        device = doc["traces"][0]["memory"]["devices"][0]
        self.assertEqual(max(device["curve"]["allocated_bytes"]), 9000)  # the peak survives downsampling
        self.assertEqual(max(device["curve"]["reserved_bytes"]), 12000)
        self.assertTrue(dom.by_id("memory-curve"))
        drawn = {e["attrs"]["data-series"]: int(e["attrs"]["data-points"]) for e in dom.tags("polyline")}
        self.assertEqual(drawn.get("allocated"), len(device["curve"]["allocated_bytes"]))
        self.assertEqual(drawn.get("reserved"), len(device["curve"]["reserved_bytes"]))

    def test_a_job_page_has_the_rank_heatmap(self):
        job = os.path.join(self.tmp, "job")
        ferret("gen", "job", "--ranks", "4", "--steps", "3", "--straggler", "2", "-o", job)
        page, doc, dom, console = self.page_and_json("analyze", job)
        self.check_common(page, dom, console)
        self.assertEqual(doc["schema"], "ferret.job/1")
        self.assertEqual(dom.by_id("verdict")["text"], doc["verdict"]["headline"])
        heat = next(e for e in dom.tags("table") if "heat" in e["attrs"].get("class", ""))
        self.assertEqual(int(heat["attrs"]["data-rows"]), 4)
        steps = sorted(float(e["attrs"]["data-value"]) for e in dom.tags("td")
                       if e["attrs"].get("data-value") and float(e["attrs"]["data-value"]) in
                       [r["mean_step_us"] for r in doc["ranks"]])
        self.assertEqual(steps, sorted(r["mean_step_us"] for r in doc["ranks"]))

    def test_a_diff_page(self):
        base = os.path.join(EXAMPLES, "synthetic-input-bound.json.gz")
        new = os.path.join(EXAMPLES, "synthetic-launch-bound.json.gz")
        page = os.path.join(self.tmp, "diff.html")
        doc = json.loads(ferret("diff", "--json", "--html", page, base, new, check=False).stdout)
        dom_text, console = chromium(page, "--dump-dom")
        dom = Dom(dom_text)
        self.check_common(page, dom, console)
        self.assertEqual(dom.by_id("verdict")["text"], doc["step_time"]["headline"])
        # Before and after side by side: the mean breakdowns as two stacked bars with the document's
        # microseconds, and every step of each side on one shared scale.
        self.assertTrue(dom.by_id("side-by-side"))
        segments = sorted((e["attrs"]["data-category"], float(e["attrs"]["data-us"])) for e in dom.tags("rect")
                          if "data-category" in e["attrs"])
        expected = sorted([(r["category"], r["base_us"]) for r in doc["breakdown"] if r["base_us"] > 0] +
                          [(r["category"], r["new_us"]) for r in doc["breakdown"] if r["new_us"] > 0])
        self.assertEqual(segments, expected)
        columns = {e["attrs"]["data-side"]: e for e in dom.tags("svg") if "data-side" in e["attrs"]}
        self.assertEqual(sorted(columns), ["base", "new"])
        for side in ("base", "new"):
            bars = [float(e["attrs"]["data-us"]) for e in dom.tags("rect")
                    if "data-us" in e["attrs"] and "data-category" not in e["attrs"] and
                    e["attrs"].get("data-side-of") == side]
            self.assertEqual(bars, doc[side]["step_us"])

    def test_trace_text_stays_text(self):
        evil = '</script><img src=x onerror="document.title=1"><script>document.body.dataset.pwned=1</script>'
        events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                   "ts": i * 100, "dur": 100} for i in range(3)]
        events += [{"ph": "X", "cat": "cpu_op", "name": evil, "pid": 1, "tid": 1, "ts": i * 100 + 1, "dur": 90}
                   for i in range(3)]
        path = os.path.join(self.tmp, "evil.json.gz")
        with gzip.open(path, "wt") as f:
            json.dump({"traceEvents": events}, f)
        page, doc, dom, console = self.page_and_json("analyze", path)
        self.check_common(page, dom, console)
        self.assertEqual(dom.tags("img"), [])
        self.assertEqual(len(dom.tags("script")), 2)  # the data block and the page's own script
        self.assertNotIn("data-pwned", json.dumps(dom.tags("body")[0]["attrs"]))
        self.assertTrue(any(evil in e["text"] for e in dom.tags("td")), "the name must show as text")

    def test_the_screenshot_is_not_blank(self):
        page = os.path.join(self.tmp, "shot.html")
        ferret("analyze", "--html", page, os.path.join(EXAMPLES, "synthetic-input-bound.json.gz"))
        shot = os.path.join(self.tmp, "shot.png")
        chromium(page, "--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}")
        self.assertTrue(os.path.getsize(shot) > 10_000)
        self.assertFalse(png_is_blank(shot))
        blank = os.path.join(self.tmp, "blank.html")
        with open(blank, "w") as f:
            f.write("<html><body></body></html>")
        chromium(blank, "--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}")
        self.assertTrue(png_is_blank(shot), "the blank check must see a blank page as blank")


if __name__ == "__main__":
    unittest.main()
