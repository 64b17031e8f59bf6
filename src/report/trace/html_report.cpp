#include "report/trace/html_report.h"

#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/input_error.h"
#include "base/text.h"

namespace ferret {

namespace {

// The page around the document. Everything it needs is inline; the policy forbids any fetch
// (default-src 'none'), so even a report that somehow held a URL could not load it.
constexpr std::string_view kHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ferret">
<title>)HTML";

constexpr std::string_view kStyle = R"HTML(</title>
<style>
:root { --fg:#1d232b; --muted:#5b6672; --line:#d9dee4; --bg:#fff; --panel:#f6f8fa; --high:#c62828; --medium:#ef6c00; --low:#1565c0; --info:#607d8b; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0; padding: 24px 32px 64px; max-width: 1280px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 15px; margin: 18px 0 6px; }
.muted { color: var(--muted); } .verdict { font-size: 16px; background: var(--panel); border-left: 4px solid var(--high); padding: 10px 14px; margin: 12px 0; }
.verdict.none { border-left-color: var(--info); }
.badge { display: inline-block; font-size: 11px; font-weight: 600; text-transform: uppercase; border-radius: 3px; padding: 1px 6px; color: #fff; margin-right: 6px; vertical-align: 1px; }
.badge.high { background: var(--high); } .badge.medium { background: var(--medium); } .badge.low { background: var(--low); } .badge.info { background: var(--info); }
.finding { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 10px 0; }
.finding .gain { float: right; font-weight: 600; } .finding p { margin: 6px 0; }
.fix { display: flex; gap: 8px; align-items: flex-start; margin: 4px 0; } .fix code { flex: 1; white-space: pre-wrap; background: var(--panel); padding: 4px 8px; border-radius: 4px; font-size: 12.5px; }
button { font: inherit; font-size: 12px; border: 1px solid var(--line); background: #fff; border-radius: 4px; padding: 2px 8px; cursor: pointer; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); cursor: pointer; user-select: none; white-space: nowrap; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.name { word-break: break-all; max-width: 640px; } tr.hidden { display: none; }
.filter { margin: 4px 0; padding: 3px 6px; width: 280px; border: 1px solid var(--line); border-radius: 4px; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.sides { display: flex; gap: 24px; flex-wrap: wrap; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
.heat td.num { color: #111; }
</style>
</head>
<body>
<noscript>This report is drawn by its inline script; the data is in the ferret-data block of the page source.</noscript>
<main id="report"></main>
<script type="application/json" id="ferret-data">)HTML";

constexpr std::string_view kScript = R"HTML(</script>
<script>
"use strict";
(function () {
const doc = JSON.parse(document.getElementById("ferret-data").textContent);
const root = document.getElementById("report");
// Every string from the document becomes a text node: nothing is ever parsed as HTML.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}
function svgEl(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}
function num(v, digits) { return v === null || v === undefined || Number.isNaN(v) ? "-" : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 2 : digits, minimumFractionDigits: 0 }); }
function us(v) {
  if (v === null || v === undefined) return "-";
  const a = Math.abs(v);
  if (a >= 1e6) return num(v / 1e6, 3) + " s";
  if (a >= 1e3) return num(v / 1e3, 3) + " ms";
  return num(v, 3) + " us";
}
function speedup(v) { return v === null || v === undefined ? "-" : Number(v).toFixed(2) + "x"; }
function section(id, title) { const s = el("section", { id: id }, el("h2", {}, title)); root.append(s); return s; }
const COLORS = { kernel: "#2e7d32", memcpy: "#00838f", memset: "#4fb3bf", communication: "#6a1b9a", runtime: "#f9a825", dataloader: "#c62828", cpu_exec: "#1565c0", other: "#9e9e9e" };

// A table whose columns sort on click (numbers by data-value) and, with `filter`, a name filter;
// rows past `cap` wait behind a "show more" button, all of them kept in the page.
function table(columns, rows, opts) {
  opts = opts || {};
  const cap = opts.cap || 25;
  const t = el("table", { "class": opts.cls || null, "data-rows": rows.length });
  const head = el("tr");
  columns.forEach((c, i) => {
    const th = el("th", { "class": c.num ? "num" : null }, c.label);
    th.addEventListener("click", () => sortBy(i, c.num));
    head.append(th);
  });
  t.append(el("thead", {}, head));
  const body = el("tbody");
  rows.forEach((r, n) => {
    const tr = el("tr", { "class": n >= cap ? "hidden" : null });
    columns.forEach(c => {
      const v = c.get(r);
      const td = el("td", { "class": c.num ? "num" : (c.name ? "name" : null), "data-value": c.num && typeof v === "number" ? v : null },
                    c.fmt ? c.fmt(v, r) : (v === null || v === undefined ? "-" : v));
      if (c.heat && typeof v === "number" && c.max > 0) td.style.background = "rgba(198,40,40," + (0.08 + 0.6 * Math.min(1, v / c.max)).toFixed(3) + ")";
      tr.append(td);
    });
    body.append(tr);
  });
  t.append(body);
  let asc = {};
  function sortBy(i, numeric) {
    const trs = Array.from(body.rows);
    asc[i] = !asc[i];
    trs.sort((a, b) => {
      const x = a.cells[i], y = b.cells[i];
      const d = numeric ? (Number(x.dataset.value || 0) - Number(y.dataset.value || 0)) : x.textContent.localeCompare(y.textContent);
      return asc[i] ? d : -d;
    });
    trs.forEach(tr => body.append(tr));
  }
  const wrap = el("div", { "class": "table" });
  if (opts.filter) {
    const input = el("input", { "class": "filter", type: "search", placeholder: "filter by name" });
    input.addEventListener("input", () => {
      const q = input.value.toLowerCase();
      Array.from(body.rows).forEach(tr => tr.classList.toggle("hidden", q !== "" && !tr.textContent.toLowerCase().includes(q)));
    });
    wrap.append(input);
  }
  wrap.append(t);
  if (rows.length > cap) {
    const more = el("button", { "class": "more" }, "show all " + rows.length + " rows");
    more.addEventListener("click", () => { Array.from(body.rows).forEach(tr => tr.classList.remove("hidden")); more.remove(); });
    wrap.append(more);
  }
  return wrap;
}

function copyButton(text) {
  const b = el("button", { "class": "copy", title: "copy" }, "copy");
  b.addEventListener("click", () => {
    const done = () => { b.textContent = "copied"; setTimeout(() => { b.textContent = "copy"; }, 1200); };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, () => {});
  });
  return b;
}

// Fixes keep the `code` spans the rules write; each fix has its own copy button.
// A fix, and under it the facts of this trace that make it fit (its applies_because past the
// finding's title, which heads the card already).
function fixLine(text, why, title) {
  const code = el("code", {}, text);
  const line = el("div", { "class": "fix" }, code, copyButton(text));
  const own = why && why.startsWith(title + "; ") ? why.slice(title.length + 2) : "";
  if (own) line.append(el("div", { "class": "muted" }, "because " + own));
  return line;
}

function findingCard(f, n) {
  const gain = f.predicted_speedup ? "predicted " + speedup(f.predicted_speedup) + " (ceiling " + speedup(f.max_speedup) + ")" : "ceiling " + speedup(f.max_speedup) + " (not predicted)";
  const card = el("div", { "class": "finding", id: "finding-" + n, "data-id": f.id, "data-max-speedup": f.max_speedup },
    el("span", { "class": "gain" }, gain),
    el("div", {}, el("span", { "class": "badge " + f.severity }, f.severity), el("strong", {}, (n + 1) + ". " + f.title)),
    el("div", { "class": "muted" }, f.id + " - " + f.dimension + " / " + f.layer),
    el("p", {}, f.detail || ""));
  if (f.evidence && f.evidence.length)
    card.append(table([{ label: "evidence", get: e => e.name }, { label: "value", num: true, get: e => e.value, fmt: (v, e) => num(v, 3) + (e.unit && e.unit !== "count" ? " " + e.unit : "") }], f.evidence, { cls: "evidence" }));
  if (f.fixes && f.fixes.length) { card.append(el("h3", {}, "Fix")); f.fixes.forEach((x, i) => card.append(fixLine(x, (f.applies_because || [])[i], f.title))); }
  if (f.threshold) card.append(el("div", { "class": "muted" }, "threshold: " + f.threshold));
  return card;
}

// Stacked bars, one per step: the breakdown of its wall time by category.
function breakdownChart(steps) {
  const cats = Object.keys(COLORS);
  const W = 900, row = 18, left = 110, H = steps.length * (row + 4) + 24;
  const max = Math.max(...steps.map(s => s.duration_us || 0), 1);
  const svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "class": "breakdown" });
  steps.forEach((s, i) => {
    const y = i * (row + 4);
    const label = svgEl("text", { x: 0, y: y + 13 }); label.textContent = s.label; svg.append(label);
    let x = left;
    cats.forEach(c => {
      const v = (s.breakdown_us || {})[c] || 0;
      const w = (W - left - 90) * v / max;
      if (w > 0) {
        const r = svgEl("rect", { x: x.toFixed(2), y: y, width: w.toFixed(2), height: row, fill: COLORS[c], "data-category": c, "data-us": v });
        const tip = svgEl("title", {}); tip.textContent = c + ": " + us(v); r.append(tip);
        svg.append(r);
        x += w;
      }
    });
    const total = svgEl("text", { x: x + 6, y: y + 13 }); total.textContent = us(s.duration_us); svg.append(total);
  });
  const legend = el("div", { "class": "legend" }, cats.map(c => el("span", {}, (() => { const i = el("i"); i.style.background = COLORS[c]; return i; })(), c)));
  return el("div", {}, svg, legend);
}

// A line chart of series over time: `series` = [{name, color, values, fill}], x in buckets from
// start_us of width bucket_us; vertical `marks` = [{at_us, label}] (step starts); `lanes` = one row
// under the plot per finding, [{label, title, spans: [[start_us, duration_us], ...]}], where it happens.
function curveChart(cls, start_us, bucket_us, series, maxY, yLabel, marks, lanes) {
  lanes = lanes || [];
  const LANE = 12, W = 900, H = 160 + LANE * lanes.length, L = 60, R = 10, T = 10, B = 24 + LANE * lanes.length;
  const n = Math.max(...series.map(s => s.values.length), 1);
  const svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "class": cls });
  const x = i => L + (W - L - R) * i / n, y = v => T + (H - T - B) * (1 - Math.max(0, v) / (maxY || 1));
  svg.append(svgEl("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), stroke: "#999" }));
  const top = svgEl("text", { x: 0, y: T + 8 }); top.textContent = yLabel; svg.append(top);
  (marks || []).forEach(m => {
    const i = (m.at_us - start_us) / bucket_us;
    if (i < 0 || i > n) return;
    svg.append(svgEl("line", { x1: x(i), y1: T, x2: x(i), y2: y(0), stroke: "#bbb", "stroke-dasharray": "3,3", "class": "mark" }));
    const t = svgEl("text", { x: x(i) + 2, y: y(0) + 16 }); t.textContent = m.label; svg.append(t);
  });
  series.forEach(s => {
    const pts = [];
    s.values.forEach((v, i) => { if (v !== null && v >= 0) pts.push(x(i).toFixed(1) + "," + y(v).toFixed(1), x(i + 1).toFixed(1) + "," + y(v).toFixed(1)); });
    if (!pts.length) return;
    if (s.fill) svg.append(svgEl("polygon", { points: x(0) + "," + y(0) + " " + pts.join(" ") + " " + x(n) + "," + y(0), fill: s.color, opacity: 0.35 }));
    svg.append(svgEl("polyline", { points: pts.join(" "), fill: "none", stroke: s.color, "stroke-width": 1.2, "data-series": s.name, "data-points": s.values.length }));
  });
  lanes.forEach((lane, k) => {
    const ly = H - B + 20 + k * LANE;
    const label = svgEl("text", { x: 0, y: ly + 9, "class": "lane-label" }); label.textContent = lane.label; svg.append(label);
    lane.spans.forEach(sp => {
      const i0 = (sp[0] - start_us) / bucket_us, i1 = (sp[0] + sp[1] - start_us) / bucket_us;
      if (i1 < 0 || i0 > n) return;
      const x0 = x(Math.max(0, i0)), x1 = x(Math.min(n, i1));
      const r = svgEl("rect", { x: x0.toFixed(2), y: ly, width: Math.max(1.5, x1 - x0).toFixed(2), height: LANE - 3, fill: "#c62828", "class": "finding-mark", "data-finding-id": lane.id });
      const tip = svgEl("title", {}); tip.textContent = lane.title + " - at " + us(sp[0] - start_us) + " for " + us(sp[1]); r.append(tip);
      svg.append(r);
    });
  });
  const legend = el("div", { "class": "legend" }, series.map(s => el("span", {}, (() => { const i = el("i"); i.style.background = s.color; return i; })(), s.name)));
  return el("div", {}, svg, legend);
}

// The findings that say where they happen, as lanes for curveChart (the first 6 by rank).
function findingLanes(findings) {
  return (findings || []).map((f, n) => ({ f: f, n: n })).filter(x => x.f.where && x.f.where.spans_us && x.f.where.spans_us.length).slice(0, 6)
    .map(x => ({ id: x.f.id, label: "#" + (x.n + 1) + " " + x.f.id.slice(0, 8), title: x.f.id + ": " + x.f.title, spans: x.f.where.spans_us }));
}

function bytes(v) { if (v === null || v === undefined || v < 0) return "-"; const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; while (v >= 1024 && i < 4) { v /= 1024; i++; } return num(v, 2) + " " + u[i]; }

function renderTrace(t, index) {
  const suffix = doc.traces.length > 1 ? " (" + (index + 1) + ")" : "";
  if (t.error) { section("error-" + index, "Could not analyse" + suffix).append(el("p", {}, t.source + ": " + t.error)); return; }
  const head = section("summary-" + index, "Trace" + suffix);
  head.append(el("div", { "class": "muted" }, t.source + " - " + t.format + ", " + t.platform + (t.window ? ", window " + t.window.label : "")));
  const v = t.verdict || {};
  head.append(el("div", { "class": "verdict" + (v.bottleneck_found ? "" : " none"), id: index ? "verdict-" + index : "verdict", "data-finding-id": v.finding_id || "" }, v.headline || "No verdict"));

  const fs = section("findings" + (index ? "-" + index : ""), "Findings (" + (t.findings || []).length + ")");
  (t.findings || []).forEach((f, n) => fs.append(findingCard(f, n)));
  if (!(t.findings || []).length) fs.append(el("p", { "class": "muted" }, "No finding."));

  if (t.steps && t.steps.list && t.steps.list.length) {
    const bs = section("breakdown" + (index ? "-" + index : ""), "Step time breakdown (" + t.steps.count + " steps, mean " + us(t.steps.avg_us) + ")");
    const steps = t.steps.list.map(s => ({ label: "step " + s.number, duration_us: s.duration_us, breakdown_us: s.breakdown_us }));
    bs.append(breakdownChart(steps.slice(0, 200)));
    if (t.steps.count > 200) bs.append(el("p", { "class": "muted", id: "steps-left-out" }, "first 200 of " + t.steps.count + " steps drawn (ferret analyze --json has them all)"));
  }
  const curves = (t.temporal || {}).busy_curves || [];
  if (curves.length) {
    const ts = section("timeline" + (index ? "-" + index : ""), "GPU activity over the window");
    const marks = ((t.steps || {}).list || []).filter(s => s.number >= 0).slice(0, 100).map(s => ({ at_us: s.start_us, label: "#" + s.number }));
    curves.forEach(c => {
      ts.append(el("h3", {}, "GPU " + c.device + ": busy % per " + us(c.bucket_us)));
      ts.append(curveChart("timeline", c.start_us, c.bucket_us, [{ name: "busy %", color: "#2e7d32", values: c.busy_pct, fill: true }], 100, "100%", marks, findingLanes(t.findings)));
    });
  }
  const memCurves = ((t.memory || {}).devices || []).filter(d => d.curve);
  if (memCurves.length) {
    const mc = section("memory-curve" + (index ? "-" + index : ""), "Memory over the window");
    memCurves.forEach(d => {
      const c = d.curve;
      const maxY = Math.max(d.capacity_bytes > 0 ? d.capacity_bytes : 0, ...c.reserved_bytes, ...c.allocated_bytes, 1);
      mc.append(el("h3", {}, (d.device_type === 0 ? "CPU" : "device " + d.device) + ": peak allocated " + bytes(d.peak_allocated_bytes) + ", peak reserved " + bytes(d.peak_reserved_bytes) + (d.capacity_bytes > 0 ? " of " + bytes(d.capacity_bytes) : "")));
      mc.append(curveChart("memory", c.start_us, c.bucket_us, [{ name: "reserved", color: "#ef6c00", values: c.reserved_bytes, fill: false }, { name: "allocated", color: "#1565c0", values: c.allocated_bytes, fill: true }], maxY, bytes(maxY), []));
    });
  }
  if (t.breakdown_us) {
    const rows = Object.keys(t.breakdown_us).map(k => ({ category: k, us: t.breakdown_us[k], pct: (t.breakdown_pct || {})[k] }));
    const bt = section("breakdown-mean" + (index ? "-" + index : ""), "Mean per step");
    bt.append(table([{ label: "category", get: r => r.category }, { label: "time", num: true, get: r => r.us, fmt: us }, { label: "%", num: true, get: r => r.pct, fmt: v => num(v, 2) }], rows));
  }
  if (t.gpus && t.gpus.length) {
    const gs = section("gpus" + (index ? "-" + index : ""), "GPUs");
    gs.append(table([{ label: "device", get: g => g.device }, { label: "name", get: g => g.name }, { label: "busy %", num: true, get: g => g.utilization_pct, fmt: v => num(v, 2) },
      { label: (t.gpus[0].multiprocessor || "SM") + " efficiency %", num: true, get: g => g.sm_efficiency_pct, fmt: v => num(v, 2) }, { label: "occupancy %", num: true, get: g => g.achieved_occupancy_pct, fmt: v => num(v, 2) },
      { label: (t.gpus[0].matrix_units || "matrix units") + " %", num: true, get: g => g.tensor_core_pct, fmt: v => num(v, 2) }, { label: "kernel time", num: true, get: g => g.kernel_us, fmt: us }], t.gpus));
  }
  const h = t.hot_spots || {};
  const ops = section("operators" + (index ? "-" + index : ""), "Top operators");
  const opCols = [{ label: "operator", name: true, get: r => r.name }, { label: "calls", num: true, get: r => r.calls, fmt: v => num(v, 0) },
    { label: "device self", num: true, get: r => r.device_self_us, fmt: us }, { label: "host self", num: true, get: r => r.host_self_us, fmt: us }, { label: "host total", num: true, get: r => r.host_total_us, fmt: us }];
  const byDevice = (h.ops_by_device || []).some(r => r.device_self_us > 0);
  ops.append(table(opCols, byDevice ? h.ops_by_device : (h.ops_by_host || []), { filter: true, cls: "ops" }));
  if ((h.kernels || []).length) {
    const ks = section("kernels" + (index ? "-" + index : ""), "Top kernels");
    ks.append(table([{ label: "kernel", name: true, get: r => r.name }, { label: "calls", num: true, get: r => r.calls, fmt: v => num(v, 0) }, { label: "total", num: true, get: r => r.total_us, fmt: us },
      { label: "mean", num: true, get: r => r.mean_us, fmt: us }, { label: "occupancy %", num: true, get: r => r.mean_occupancy_pct, fmt: v => num(v, 1) }, { label: (t.gpus && t.gpus.length && t.gpus[0].matrix_units) || "matrix units", get: r => r.tensor_core ? "yes" : "no" }], h.kernels, { filter: true, cls: "kernels" }));
  }
  const rf = t.roofline || {};
  if ((rf.groups || []).length) {
    const rs = section("roofline" + (index ? "-" + index : ""), "Roofline" + (rf.device_name ? " - " + rf.device_name : ""));
    rs.append(table([{ label: "op", name: true, get: g => g.op }, { label: "input dims", name: true, get: g => g.input_dims }, { label: "dtype", get: g => g.dtype }, { label: "calls", num: true, get: g => g.calls, fmt: v => num(v, 0) },
      { label: "kernel time", num: true, get: g => g.kernel_us, fmt: us }, { label: "TFLOP/s", num: true, get: g => g.tflops_per_s, fmt: v => num(v, 2) }, { label: "TB/s", num: true, get: g => g.tb_per_s, fmt: v => num(v, 3) },
      { label: "bound", get: g => g.bound }, { label: "% of peak", num: true, get: g => g.peak_pct, fmt: v => num(v, 1) }], rf.groups, { filter: true, cls: "roofline" }));
  }
  const mem = t.memory || {};
  if (mem.present && (mem.devices || []).length) {
    const ms = section("memory" + (index ? "-" + index : ""), "Memory");
    const keys = Object.keys(mem.devices[0]).filter(k => typeof mem.devices[0][k] !== "object");
    ms.append(table(keys.map(k => ({ label: k.replace(/_/g, " "), num: typeof mem.devices[0][k] === "number", get: d => d[k], fmt: v => typeof v === "number" ? num(v, 2) : v })), mem.devices));
  }
  const comm = t.communication || {};
  if (comm.present) {
    const cs = section("communication" + (index ? "-" + index : ""), "Communication: " + num(comm.comm_pct, 1) + "% of the window, " + num(comm.exposed_pct, 1) + "% exposed, " + num(comm.overlap_pct, 1) + "% overlapped");
    const cols = (comm.collectives || []).length ? Object.keys(comm.collectives[0]).filter(k => typeof comm.collectives[0][k] !== "object") : [];
    cs.append(table(cols.map(k => ({ label: k.replace(/_/g, " "), num: typeof comm.collectives[0][k] === "number", get: c => c[k], fmt: v => typeof v === "number" ? num(v, 3) : v })), comm.collectives || []));
  }
  const input = t.input || {};
  if ((input.repairs || []).length || (input.skips || []).length || (input.notes || []).length) {
    const is = section("input" + (index ? "-" + index : ""), "Input repairs and notes");
    [].concat(input.repairs || [], input.skips || []).forEach(r => is.append(el("div", {}, typeof r === "string" ? r : JSON.stringify(r))));
    (input.notes || []).forEach(n => is.append(el("div", { "class": "muted" }, n)));
  }
}

function renderJob() {
  const head = section("summary", "Job: " + (doc.ranks || []).length + " ranks");
  head.append(el("div", { "class": "muted" }, "world size " + doc.world_size + ", median step " + us(doc.median_step_us)));
  head.append(el("div", { "class": "verdict" + (doc.verdict && doc.verdict.finding_id ? "" : " none"), id: "verdict", "data-finding-id": (doc.verdict || {}).finding_id || "" }, (doc.verdict || {}).headline || ""));
  const fs = section("findings", "Findings (" + (doc.findings || []).length + ")");
  (doc.findings || []).forEach((f, n) => fs.append(findingCard(f, n)));
  const ranks = doc.ranks || [];
  const heatCols = ["mean_step_us", "gpu_utilization_pct", "input_us_per_step", "exposed_communication_us_per_step", "collective_wait_us_per_step"];
  const maxOf = k => Math.max(0, ...ranks.map(r => typeof r[k] === "number" ? r[k] : 0));
  const hs = section("ranks", "Per-rank heatmap");
  hs.append(table([{ label: "rank", num: true, get: r => r.rank, fmt: v => num(v, 0) }].concat(heatCols.map(k => ({ label: k.replace(/_us_per_step$/, " / step").replace(/_/g, " "), num: true, heat: true, max: maxOf(k), get: r => r[k], fmt: v => k.endsWith("_pct") ? num(v, 1) + "%" : us(v) }))),
    ranks, { cls: "heat", cap: 64 }));
  if ((doc.stragglers || []).length || (doc.stragglers && doc.stragglers.list)) {
    const ss = section("stragglers", "Stragglers");
    ss.append(el("pre", {}, JSON.stringify(doc.stragglers, null, 2)));
  }
  const rv = section("rank-verdicts", "Each rank's own verdict");
  (doc.rank_verdicts || []).forEach(v => rv.append(el("div", {}, typeof v === "string" ? v : (v.headline || JSON.stringify(v)))));
}

// One column of bars, a step each, on the scale `most` shared with the chart beside it.
function stepTimes(title, values, most, side) {
  const W = 440, row = 10, H = Math.min(values.length, 200) * (row + 2) + 4;
  const svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "class": "step-times", "data-side": side });
  values.slice(0, 200).forEach((v, i) => {
    const r = svgEl("rect", { x: 0, y: i * (row + 2), width: ((W - 80) * v / most).toFixed(2), height: row, fill: "#546e7a", "data-us": v, "data-side-of": side });
    const tip = svgEl("title", {}); tip.textContent = "step " + (i + 1) + ": " + us(v); r.append(tip);
    svg.append(r);
  });
  return el("div", {}, el("h3", {}, title), svg, values.length > 200 ? el("p", { "class": "muted" }, "first 200 drawn") : "");
}

function renderDiff() {
  const head = section("summary", "Diff");
  head.append(el("div", { "class": "muted" }, "BASE " + doc.base.source + " (" + doc.base.steps + " steps) -> NEW " + doc.new.source + " (" + doc.new.steps + " steps)"));
  head.append(el("div", { "class": "verdict" + (doc.step_time.verdict === "significantly-slower" ? "" : " none"), id: "verdict" }, doc.step_time.headline));
  if (doc.gate && doc.gate.enabled) head.append(el("div", { id: "gate" }, "Gate: " + doc.gate.outcome + (doc.gate.reason ? " - " + doc.gate.reason : "")));
  // Before and after, side by side on one scale: the mean step's stacked breakdown, then every
  // step's time.
  const mean = which => { const o = {}; (doc.breakdown || []).forEach(r => { o[r.category] = r[which + "_us"] || 0; }); return o; };
  const sides = section("side-by-side", "Before and after");
  sides.append(breakdownChart([{ label: "before (mean)", duration_us: doc.base.mean_step_us, breakdown_us: mean("base") },
    { label: "after (mean)", duration_us: doc.new.mean_step_us, breakdown_us: mean("new") }]));
  const most = Math.max(...(doc.base.step_us || []), ...(doc.new.step_us || []), 1);
  sides.append(el("div", { "class": "sides" },
    stepTimes("before: " + doc.base.steps + " steps", doc.base.step_us || [], most, "base"),
    stepTimes("after: " + doc.new.steps + " steps", doc.new.step_us || [], most, "new")));
  const bs = section("breakdown", "Breakdown, mean per step: before and after");
  bs.append(table([{ label: "category", get: r => r.label }, { label: "base", num: true, get: r => r.base_us, fmt: us }, { label: "new", num: true, get: r => r.new_us, fmt: us },
    { label: "change", num: true, get: r => r.change_us, fmt: us }, { label: "change %", num: true, get: r => r.relative_change_pct, fmt: v => num(v, 1) }], doc.breakdown || []));
  for (const [key, title] of [["operators", "Operators"], ["kernels", "Kernels"]]) {
    const d = doc[key]; if (!d) continue;
    const s = section(key, title + ": " + Object.entries(d.counts || {}).map(([k, v]) => v + " " + k).join(", "));
    for (const list of ["slower", "faster", "added", "removed"]) {
      const rows = d[list] || []; if (!rows.length) continue;
      s.append(el("h3", {}, list));
      const cols = Object.keys(rows[0]).filter(k => typeof rows[0][k] !== "object");
      s.append(table(cols.map(k => ({ label: k.replace(/_/g, " "), name: k === "name", num: typeof rows[0][k] === "number", get: r => r[k], fmt: v => typeof v === "number" ? num(v, 3) : v })), rows, { filter: true }));
    }
  }
  const f = doc.findings || {};
  const fs = section("findings", "Findings: " + (f.appeared || []).length + " appeared, " + (f.resolved || []).length + " resolved, " + (f.persisting || []).length + " persisting");
  for (const list of ["appeared", "resolved", "persisting"]) (f[list] || []).forEach(x => fs.append(el("div", { "class": "finding" }, el("strong", {}, list + ": "), (x.new || x.base || x).title || x.cause)));
}

root.append(el("h1", {}, "ferret report"), el("div", { "class": "muted", id: "schema" }, doc.schema));
if (doc.schema === "ferret.job/1") renderJob();
else if (doc.schema === "ferret.diff/2") renderDiff();
else (doc.traces || []).forEach(renderTrace);
// For tests and curious readers: that the page drew, and that it fetched nothing.
document.body.dataset.rendered = "1";
document.body.dataset.renderMs = Math.round(performance.now());  // since navigation began (bench/html_bench.sh)
document.body.dataset.resources = String(performance.getEntriesByType("resource").length);
})();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (char c : json) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// Long arrays (one entry per step of a trace with 100,000 steps) keep their first entries in the
// page, which draws at most 200 steps anyway; "<key>_left_out" says how many went. With the curves
// downsampled and the tables capped by --top, this bounds the page whatever the trace's size.
constexpr std::size_t kPageArrayLimit = 500;

void trim_long_arrays(nlohmann::ordered_json& node, bool root) {
  if (node.is_array()) {
    for (auto& child : node) trim_long_arrays(child, false);
    return;
  }
  if (!node.is_object()) return;
  std::vector<std::pair<std::string, std::size_t>> trimmed;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (root && it.key() == "traces") {  // each trace of a per-trace report is its own report
      trim_long_arrays(it.value(), false);
      continue;
    }
    if (it.value().is_array() && it.value().size() > kPageArrayLimit) {
      trimmed.push_back({it.key(), it.value().size() - kPageArrayLimit});
      it.value().erase(it.value().begin() + static_cast<std::ptrdiff_t>(kPageArrayLimit), it.value().end());
    }
    trim_long_arrays(it.value(), false);
  }
  for (const auto& [key, left_out] : trimmed) node[key + "_left_out"] = left_out;
}

// The document as the page carries it: compact (half the size of --json's indented text), long
// arrays trimmed. Text that does not parse (never ferret's own output) travels as it is.
// A ferret document nests a few levels; the page walks it recursively, so text nested deeper than
// any document is refused (from Python, a ValueError), never a stack overflow.
constexpr std::size_t kMaxDocumentDepth = 128;

std::string page_document(std::string_view document_json) {
  if (json_nesting_depth(document_json, kMaxDocumentDepth) > kMaxDocumentDepth)
    throw InputError(
        fmt::format("the document is nested deeper than {} levels: not a ferret document", kMaxDocumentDepth));
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(document_json, nullptr, false);
  if (doc.is_discarded()) return std::string(document_json);
  trim_long_arrays(doc, true);
  return doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string html_page(std::string_view document_json, std::string_view title) {
  std::string out;
  out.reserve(kHead.size() + kStyle.size() + kScript.size() + document_json.size() + 256);
  out += kHead;
  for (char c : title) {  // the title is text: escape what HTML would read as markup
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  out += kStyle;
  out += json_for_script(page_document(document_json));
  out += kScript;
  return out;
}

}  // namespace ferret
