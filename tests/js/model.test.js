/* The viewer's model without a page: search (Model.find against Python's Graph.find), diff
 * states decoded from an overlay payload, payload patches rebuilt (applyPatch against
 * views/graph_viewer/patch.py). Payloads from tests/fast/test_viewer_js.py. */
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { loadViewer, fixtures } = require("./load.js");

const data = fixtures();
const { XlanbGraph } = loadViewer();
const why = "XLANB_JS_FIXTURES not set: run through tests/fast/test_viewer_js.py";

test("search finds what Graph.find finds, in node order", (t) => {
  if (!data) return t.skip(why);
  const m = new XlanbGraph.Model(data.large.payload);
  for (const [query, expected] of Object.entries(data.large.found)) {
    const found = Array.from(m.find(query));
    assert.deepEqual(found, [...found].sort((a, b) => a - b), query);
    // the viewer also searches labels: a superset of Python's matches
    for (const v of expected) assert.ok(found.includes(v), `${query}: node ${v} not found`);
    for (const v of found) {
      if (!expected.includes(v)) assert.ok(m.label[v].toLowerCase().includes(query.toLowerCase()));
    }
    assert.deepEqual(Array.from(m.find("  " + query + " ")), found, "the query is trimmed");
  }
  assert.equal(m.find("").length, 0);
  assert.equal(m.find("   ").length, 0);
  assert.ok(m.find("add").length > 0);
});

test("an overlay's diff states: Python's counts, one state per node", (t) => {
  if (!data) return t.skip(why);
  const m = new XlanbGraph.Model(data.overlay.payload);
  assert.equal(m.diff.length, m.n);
  const counts = { same: 0, added: 0, removed: 0, changed: 0 };
  for (const state of m.diff) counts[XlanbGraph.DIFF_STATES[state]]++;
  assert.deepEqual(counts, data.overlay.counts);
  assert.ok(counts.changed > 0);
  const plain = new XlanbGraph.Model(data.large.payload);
  assert.equal(plain.diff, null);
  assert.equal(plain.peer, null);
});

test("a payload patch rebuilds the payload Python sent", (t) => {
  if (!data) return t.skip(why);
  const base = JSON.parse(JSON.stringify(data.patch.base));
  // through JSON: the rebuilt arrays belong to the viewer's context
  const rebuilt = JSON.parse(JSON.stringify(XlanbGraph.applyPatch(base, data.patch.patch)));
  assert.deepEqual(rebuilt, data.patch.data);
  assert.deepEqual(base, data.patch.base, "the base is left as it was");
  assert.equal(new XlanbGraph.Model(rebuilt).n, data.patch.data.nodes.name.length);
});

/** The bytes of a binary payload (base64 in the fixtures) as the page unpacks them. */
function bufferOf(base64) {
  const bytes = Buffer.from(base64, "base64");
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
}

test("a binary payload decodes to the payload Python sent; texts written out from fields", (t) => {
  if (!data) return t.skip(why);
  const plain = JSON.parse(JSON.stringify(data.binary.plain));
  const m = new XlanbGraph.Model(XlanbGraph.decodeBuffer(bufferOf(data.binary.binary)));
  assert.deepEqual(Array.from(m.label), plain.nodes.label.map((i) => plain.strings[i]));
  const cut = m.data.stringTable.cut.filter((x) => x !== null).length;
  assert.ok(cut < plain.strings.length / 2, `the labels cut ${cut} strings, not the names too`);
  assert.equal(m.string(plain.strings.length - 1), plain.strings[plain.strings.length - 1]);
  assert.deepEqual(Array.from(m.data.strings), plain.strings, "strings, non-ASCII ones too");
  for (const group of ["nodes", "scopes", "cost"]) {
    for (const [key, column] of Object.entries(plain[group])) {
      if (key === "attrs") continue;
      assert.deepEqual(Array.from(m.data[group][key]), column, `${group}.${key}`);
    }
  }
  const attrs = Array.from({ length: m.n }, (_, v) => Array.from(m.attrsOf(v)));
  assert.deepEqual(attrs, plain.nodes.attrs);
  assert.ok(m.data.attrSets.length < m.n / 2, "each distinct set of attributes travels once");
  assert.deepEqual(Array.from(m.data.edges), plain.edges);
  for (const key of ["version", "kind", "title", "contract", "options"]) {
    assert.deepEqual(JSON.parse(JSON.stringify(m.data[key])), plain[key], key);  // its context
  }
  assert.ok(plain.cost.flops.includes(null) || plain.cost.flops.every((x) => x !== null));
  assert.equal(m.text, null);
  const ref = new XlanbGraph.Model(plain);
  let withInputs = 0;
  for (let v = 0; v < m.n; v++) {
    const text = m.textOf(v);
    assert.ok(text.startsWith(`${m.name[v]} = ${m.shape[v] ? m.shape[v] + " " : ""}${m.op[v]}(`), text);
    const inputs = ref.inputs[v].map((u) => ref.name[u]);
    assert.ok(text.includes(`(${inputs.join(", ")})`), text);
    if (inputs.length) withInputs++;
  }
  assert.ok(withInputs > m.n / 2);
});

test("a payload whose codes differ is refused", (t) => {
  if (!data) return t.skip(why);
  const changed = JSON.parse(JSON.stringify(data.large.payload));
  changed.contract.edgeKinds = ["control", "data", "param", "root"];
  assert.throws(() => new XlanbGraph.Model(changed), /edge kinds/);
});

test("numbers, durations and shares as the panel shows them", () => {
  assert.equal(XlanbGraph.fmt(1234), "1.2 k");
  assert.equal(XlanbGraph.fmt(null), "");
  assert.equal(XlanbGraph.fmtSeconds(0.0124), "12.4 ms");
  assert.equal(XlanbGraph.fmtSeconds(3.7312), "3.73 s");
  assert.equal(XlanbGraph.fmtShare(0.984), "98.4%");
});

test("a source reads as people know it: a notebook cell, a library from its install dir", () => {
  const { fmtSource } = XlanbGraph;
  assert.equal(fmtSource("/tmp/ipykernel_4123/2876345.py", 12), "notebook cell, line 12");
  assert.equal(fmtSource("<ipython-input-3-d181fddf38b2>", 9), "notebook cell, line 9");
  assert.equal(
    fmtSource("/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", 134),
    "torch/nn/modules/linear.py:134");
  assert.equal(fmtSource("/usr/lib/python3/dist-packages/flax/linen/linear.py", 7),
    "flax/linen/linear.py:7");
  assert.equal(fmtSource("/home/me/train.py", 40), "/home/me/train.py:40");
  assert.equal(fmtSource("/home/me/train.py", 0), "/home/me/train.py");
  assert.equal(fmtSource("", 3), "");
});
