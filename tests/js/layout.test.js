/* XlanbGraphLayout.layered without a page: every box placed, each edge drawn down its
 * orientation (or marked reversed), no two boxes of a layer overlapping; on a real graph's
 * payload (written by tests/fast/test_viewer_js.py) and on seeded random graphs. */
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { loadViewer, fixtures } = require("./load.js");

const { XlanbGraphLayout } = loadViewer();

/** A deterministic generator (LCG), so every run draws the same graphs. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** n boxes, `edges` edges src -> dst (forward unless `cycles`), `loose` boxes with none. */
function randomGraph(seed, n, edges, { cycles = false, loose = 0 } = {}) {
  const next = random(seed);
  const linked = n - loose;
  const w = [], h = [], key = [], src = [], dst = [];
  for (let i = 0; i < n; i++) {
    w.push(20 + Math.floor(next() * 200));
    h.push(next() < 0.2 ? 38 : 34);
    key.push(i);
  }
  for (let e = 0; e < edges; e++) {
    const a = Math.floor(next() * linked), b = Math.floor(next() * linked);
    if (a === b) continue;
    if (cycles || a < b) { src.push(a); dst.push(b); } else { src.push(b); dst.push(a); }
  }
  return { n, w, h, key, src, dst };
}

function checkLayout(g, opts) {
  const out = XlanbGraphLayout.layered(g.n, g.w, g.h, g.key, g.src, g.dst, opts);
  assert.equal(out.x.length, g.n);
  assert.equal(out.y.length, g.n);
  for (let i = 0; i < g.n; i++) {
    assert.ok(Number.isFinite(out.x[i]) && Number.isFinite(out.y[i]), `box ${i} not placed`);
    assert.ok(out.x[i] - g.w[i] / 2 >= -1e-6 && out.x[i] + g.w[i] / 2 <= out.width + 1e-6);
  }
  // layers: the boxes of one layer share their centre's y
  const rows = new Map();
  for (let i = 0; i < g.n; i++) {
    if (!rows.has(out.y[i])) rows.set(out.y[i], []);
    rows.get(out.y[i]).push(i);
  }
  assert.ok(rows.size <= out.layers);
  for (let e = 0; e < g.src.length; e++) {
    const [upper, lower] = out.reversed[e] ? [g.dst[e], g.src[e]] : [g.src[e], g.dst[e]];
    assert.ok(out.y[upper] < out.y[lower], `edge ${e} (${g.src[e]} -> ${g.dst[e]}) drawn upwards`);
  }
  for (const row of rows.values()) {
    row.sort((p, q) => out.x[p] - out.x[q]);
    for (let j = 1; j < row.length; j++) {
      const left = row[j - 1], right = row[j];
      const gap = out.x[right] - g.w[right] / 2 - (out.x[left] + g.w[left] / 2);
      assert.ok(gap >= -1e-6, `boxes ${left} and ${right} overlap by ${-gap}`);
    }
  }
  return out;
}

test("an empty graph and a single box", () => {
  const empty = XlanbGraphLayout.layered(0, [], [], [], [], []);
  assert.equal(empty.x.length, 0);
  assert.equal(empty.width, 0);
  const one = checkLayout({ n: 1, w: [40], h: [34], key: [0], src: [], dst: [] });
  assert.equal(one.layers, 1);
});

test("a chain lays out one box per layer, in order", () => {
  const n = 5;
  const g = { n, w: Array(n).fill(50), h: Array(n).fill(34), key: [0, 1, 2, 3, 4],
    src: [0, 1, 2, 3], dst: [1, 2, 3, 4] };
  const out = checkLayout(g);
  assert.equal(out.layers, n);
  for (let i = 1; i < n; i++) assert.ok(out.y[i - 1] < out.y[i]);
  assert.deepEqual(Array.from(out.reversed), [0, 0, 0, 0]);
});

test("edges against the keys' order are reversed, never drawn upwards", () => {
  // 0 -> 1 -> 2 -> 0: a cycle; the edge closing it is the only reversed one
  const g = { n: 3, w: [40, 40, 40], h: [34, 34, 34], key: [0, 1, 2], src: [0, 1, 2],
    dst: [1, 2, 0] };
  const out = checkLayout(g);
  assert.deepEqual(Array.from(out.reversed), [0, 0, 1]);
});

test("loose boxes form a grid, not one endless row", () => {
  const g = randomGraph(7, 40, 0, { loose: 40 });
  const out = checkLayout(g);
  assert.ok(out.layers > 1);
});

test("seeded random graphs: acyclic, cyclic, with loose boxes and long edges", () => {
  const cases = [
    [1, 30, 45, {}], [2, 200, 400, {}], [3, 200, 300, { cycles: true }],
    [4, 120, 150, { loose: 20 }], [5, 600, 900, { cycles: true, loose: 50 }],
    [6, 3000, 4000, {}],
  ];
  for (const [seed, n, edges, shape] of cases) {
    const out = checkLayout(randomGraph(seed, n, edges, shape));
    if (!shape.cycles) assert.ok(Array.from(out.reversed).every((r) => r === 0));
  }
  // without dummy nodes (their budget spent) the same holds
  checkLayout(randomGraph(8, 300, 600), { dummyBudget: 0 });
});

test("a real graph's data and control edges", (t) => {
  const data = fixtures();
  if (!data) return t.skip("XLANB_JS_FIXTURES not set: run through tests/fast/test_viewer_js.py");
  const { XlanbGraph } = loadViewer();
  const m = new XlanbGraph.Model(data.large.payload);
  const src = [], dst = [];
  for (let e = 0; e < m.E; e++) {
    if (m.eKind[e] === XlanbGraph.EDGE.data || m.eKind[e] === XlanbGraph.EDGE.control) {
      src.push(m.eSrc[e]); dst.push(m.eDst[e]);
    }
  }
  assert.ok(src.length > 10);
  const w = Array.from(m.label, (label) => 14 + 6.7 * Math.min(34, label.length));
  checkLayout({ n: m.n, w, h: Array(m.n).fill(34), key: Array.from(m.order), src, dst });
});
