/* xlanb graph viewer (written for xlanb; no dependencies, no network), 1 of 4: the graph data.
 *
 * The viewer is four classic scripts that xlanb.views.graph_viewer inlines, in this order,
 * into one <script>: model.js (this file: the payload decoded, scopes, search), layout.js
 * (the layered layout of one level, then the scene: which boxes show, nested and placed),
 * render.js (the canvas: view transform, colours, drawing) and ui.js (toolbar, legend, details
 * panel, pointer and keys, mounting). They share one namespace, globalThis.XlanbGraph; this
 * file opens it and declares the Viewer, whose methods the three others add.
 *
 * The payload (the JSON next to each viewer element) is described in
 * xlanb/views/graph_viewer/payload.py; its `contract` names the flag bits, edge kinds, diff
 * states and categories it uses, and the Model refuses a payload whose codes differ from the
 * ones below rather than draw it wrong. */
(function (root) {
  "use strict";
  var VERSION = "xlanb-graph-6";  // 6: a big graph's payload sent binary (data-format)
  var ns = root.XlanbGraph;
  if (ns && ns.version === VERSION && ns.complete) return;  // already on the page
  ns = root.XlanbGraph = { version: VERSION, complete: false };

  // ---- the payload's codes (payload.py: FLAG_*, EDGE_KINDS, DIFF_STATES) -----------------
  /** Bits of nodes.flags. */
  var FLAG = { output: 1, fallback: 2 };
  /** Codes of the edges' kinds: the index in this list. */
  var EDGE_KINDS = ["data", "control", "param", "root"];
  var EDGE = { data: 0, control: 1, param: 2, root: 3 };
  /** Codes of nodes.diff: the index in this list. */
  var DIFF_STATES = ["same", "added", "removed", "changed"];
  var DIFF = { same: 0, added: 1, removed: 2, changed: 3 };

  function sameList(a, b) {
    return a.length === b.length && a.every(function (x, i) { return x === b[i]; });
  }
  /** Throw if the payload's codes are not the ones this script reads. */
  function checkContract(data) {
    var c = data.contract;
    if (!c) throw new Error("payload without a contract (version " + data.version + ")");
    if (!sameList(c.edgeKinds, EDGE_KINDS)) throw new Error("edge kinds " + c.edgeKinds + " != " + EDGE_KINDS);
    if (!sameList(c.diffStates, DIFF_STATES)) throw new Error("diff states " + c.diffStates + " != " + DIFF_STATES);
    for (var k in FLAG) if (c.flags[k] !== FLAG[k]) throw new Error("flag " + k + " = " + c.flags[k] + " != " + FLAG[k]);
  }

  /** Binary columns' types (payload.py's binary_payload). */
  var BINARY = { i8: Int8Array, u8: Uint8Array, i16: Int16Array, u16: Uint16Array, i32: Int32Array,
    f32: Float32Array, f64: Float64Array };
  /** A column of a binary payload ({i8|u8|i16|u16|i32|f32|f64: [byte offset from `start`,
   * count]}) read where it lies in `buffer`, a typed array; `nullable` (the cost columns): a
   * list of numbers with null where NaN, if there is a NaN; others as sent. */
  function column(x, buffer, start, nullable) {
    if (!x || typeof x !== "object" || Array.isArray(x) || ArrayBuffer.isView(x)) return x;
    var type = null, key, i;
    for (key in BINARY) if (Array.isArray(x[key])) type = key;
    if (!type) return x;
    var values = new BINARY[type](buffer, start + x[type][0], x[type][1]);
    if (!nullable || values.every(function (v) { return v === v; })) return values;
    var out = new Array(values.length);
    for (i = 0; i < values.length; i++) out[i] = values[i] === values[i] ? values[i] : null;
    return out;
  }
  /** The payload a binary payload (an ArrayBuffer: payload.py's binary_payload) holds: its JSON
   * header, its columns typed arrays over the buffer, its strings cut from their text, its
   * edges' three columns flat again. */
  function decodeBuffer(buffer) {
    var length = new DataView(buffer).getUint32(0, true);
    var data = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
    var start = Math.ceil((4 + length) / 8) * 8, table = data.strings;
    var text = new TextDecoder().decode(new Uint8Array(buffer, start + table.utf8[0], table.utf8[1]));
    var strings = new StringTable(text, column(table.lengths, buffer, start)), i;
    data.stringTable = strings;  // the strings one at a time; data.strings: the list, once read
    Object.defineProperty(data, "strings", { configurable: true, enumerable: true, get: function () {
      var list = strings.all();
      Object.defineProperty(data, "strings", { value: list, writable: true, configurable: true, enumerable: true });
      return list;
    } });
    [data.nodes, data.scopes, data.cost].forEach(function (group) {
      for (var key in group || {}) group[key] = column(group[key], buffer, start, group === data.cost);
    });
    var source = column(data.edges.source, buffer, start), target = column(data.edges.target, buffer, start);
    var kind = column(data.edges.kind, buffer, start), edges = new Int32Array(3 * source.length);
    for (i = 0; i < source.length; i++) {
      edges[3 * i] = source[i]; edges[3 * i + 1] = target[i]; edges[3 * i + 2] = kind[i];
    }
    data.edges = edges;
    return data;
  }
  /** The strings of a binary payload, cut from their text (`lengths`: each one's length) when
   * first read: most are node names, which the first drawing does not read. */
  function StringTable(text, lengths) {
    var ends = new Float64Array(lengths.length + 1);
    for (var i = 0; i < lengths.length; i++) ends[i + 1] = ends[i] + lengths[i];
    this.text = text; this.ends = ends; this.cut = new Array(lengths.length).fill(null);
  }
  StringTable.prototype.at = function (i) {
    var found = this.cut[i];
    if (found === null) found = this.cut[i] = this.text.substring(this.ends[i], this.ends[i + 1]);
    return found;
  };
  StringTable.prototype.all = function () {
    for (var i = 0; i < this.cut.length; i++) if (this.cut[i] === null) this.at(i);
    return this.cut;
  };
  /** A list or a typed array of indexes into the payload's strings, as the strings. */
  function stringsOf(data, list) {
    var table = data.stringTable, out = new Array(list.length), j;
    if (table) for (j = 0; j < list.length; j++) out[j] = table.at(list[j]);
    else for (j = 0, table = data.strings; j < list.length; j++) out[j] = table[list[j]];
    return out;
  }

  // ---- model ---------------------------------------------------------------------------
  /** The payload's columns as the viewer reads them, and its scope trees. The per-node lists of
   * strings (name, label, op, shape, opName, file, func) and the adjacency lists (inputs,
   * users) are made the first time they are read: the first drawing needs few of them. */
  function Model(data) {
    checkContract(data);
    var nd = data.nodes, sc = data.scopes, i;
    function str(list) { return stringsOf(data, list); }
    this.data = data;
    this.n = nd.name.length;
    this.text = nd.text || null;
    this.attrs = nd.attrs || null; this.attrSet = nd.attrSet || null;
    this.attrSets = data.attrSets || null;
    this.line = Int32Array.from(nd.line); this.order = Int32Array.from(nd.order);
    this.flags = Uint8Array.from(nd.flags); this.cat = Uint8Array.from(nd.cat);
    this.categories = data.contract.categories;  // nodes.cat indexes this list of names
    this.scope = Int32Array.from(nd.scope);
    this.cost = Object.assign({}, data.cost || {});
    this.diff = nd.diff ? Int8Array.from(nd.diff) : null;
    this.peer = nd.peer ? Int32Array.from(nd.peer) : null;
    this.S = sc.parent.length;
    this.sParent = Int32Array.from(sc.parent); this.sLabel = str(sc.label);
    this.sKind = str(sc.kind); this.sAnchor = Int32Array.from(sc.anchor);
    this.sSize = Int32Array.from(sc.size);
    var S = this.S, n = this.n;
    this.anchorOf = new Int32Array(n).fill(-1);
    for (i = 0; i < S; i++) if (this.sAnchor[i] >= 0) this.anchorOf[this.sAnchor[i]] = i;
    this.sDepth = new Int32Array(S);
    for (i = 0; i < S; i++) this.sDepth[i] = this.sParent[i] >= 0 ? this.sDepth[this.sParent[i]] + 1 : 0;
    this.sNodes = []; this.sScopes = []; this.topNodes = []; this.topScopes = [];
    for (i = 0; i < S; i++) { this.sNodes.push([]); this.sScopes.push([]); }
    for (i = 0; i < n; i++) (this.scope[i] >= 0 ? this.sNodes[this.scope[i]] : this.topNodes).push(i);
    for (i = 0; i < S; i++) (this.sParent[i] >= 0 ? this.sScopes[this.sParent[i]] : this.topScopes).push(i);
    this.sMinOrder = new Float64Array(S).fill(Infinity);
    for (i = 0; i < n; i++) {
      for (var p = this.scope[i]; p >= 0; p = this.sParent[p]) {
        if (this.order[i] < this.sMinOrder[p]) this.sMinOrder[p] = this.order[i]; else break;
      }
    }
    var e = data.edges, E = e.length / 3;
    this.E = E; this.eSrc = new Int32Array(E); this.eDst = new Int32Array(E); this.eKind = new Uint8Array(E);
    this.sHasBind = new Uint8Array(S);
    for (i = 0; i < E; i++) {
      this.eSrc[i] = e[3 * i]; this.eDst[i] = e[3 * i + 1]; this.eKind[i] = e[3 * i + 2];
      if (this.eKind[i] === EDGE.param) {
        for (var q = this.scope[this.eDst[i]]; q >= 0; q = this.sParent[q]) {
          if (this.sAnchor[q] >= 0) { this.sHasBind[q] = 1; break; }
        }
      }
    }
    this.measured = data.measured ? measured(data.measured, n, str) : null;
    if (this.measured) this.cost.time = this.measured.time;
    this.haystack = null;  // built by the first search
  }
  /** The payload's `measured` entries (hottest first) and, per node, its entry (`at`, -1:
   * not measured) and its seconds (`time`, null: not measured; the colour ramp's values). */
  function measured(ms, n, str) {
    var at = new Int32Array(n).fill(-1), time = new Array(n).fill(null);
    for (var i = 0; i < ms.node.length; i++) { at[ms.node[i]] = i; time[ms.node[i]] = ms.seconds[i]; }
    return {
      label: ms.label, total: ms.total, unmatched: ms.unmatched, at: at, time: time,
      node: ms.node, seconds: ms.seconds, count: ms.count, share: ms.share,
      cellLine: ms.cellLine, code: str(ms.code), file: str(ms.file), line: ms.line
    };
  }
  /** Per node, the nodes at the other end of its data and control edges. */
  function adjacency(n, from, to, kind) {
    var lists = new Array(n);
    for (var i = 0; i < n; i++) lists[i] = [];
    for (i = 0; i < from.length; i++) {
      if (kind[i] === EDGE.data || kind[i] === EDGE.control) lists[from[i]].push(to[i]);
    }
    return lists;
  }
  var M = Model.prototype;
  /** Columns of `data.nodes` read as lists of strings, made when first read. */
  ["name", "label", "op", "shape", "opName", "file", "func"].forEach(function (key) {
    Object.defineProperty(M, key, { configurable: true, get: function () {
      var value = stringsOf(this.data, this.data.nodes[key]);
      Object.defineProperty(this, key, { value: value, writable: true, configurable: true });
      return value;
    } });
  });
  /** Per node, the nodes at the other end of its data and control edges, made when first read. */
  [["inputs", "eDst", "eSrc"], ["users", "eSrc", "eDst"]].forEach(function (names) {
    Object.defineProperty(M, names[0], { configurable: true, get: function () {
      var value = adjacency(this.n, this[names[1]], this[names[2]], this.eKind);
      Object.defineProperty(this, names[0], { value: value, writable: true, configurable: true });
      return value;
    } });
  });
  /** The payload's string `i`. */
  M.string = function (i) {
    return this.data.stringTable ? this.data.stringTable.at(i) : this.data.strings[i];
  };
  /** Node v's attributes, flat: [key, value, ...] indexes into the strings (M.string). */
  M.attrsOf = function (v) {
    return (this.attrs ? this.attrs[v] : this.attrSets[this.attrSet[v]]) || [];
  };
  M.scopePath = function (s) {
    var path = [];
    for (; s >= 0; s = this.sParent[s]) path.unshift(this.sLabel[s]);
    return path;
  };
  /** Node v's instruction text: as sent, else (a big graph's payload carries none) written
   * out from its fields, `name = shape op(inputs), key=value, ...`. */
  M.textOf = function (v) {
    if (this.text) return this.text[v];
    var self = this, a = this.attrsOf(v), parts = [], i;
    for (i = 0; i + 1 < a.length; i += 2) parts.push(this.string(a[i]) + "=" + this.string(a[i + 1]));
    var inputs = this.inputs[v].map(function (u) { return self.name[u]; }).join(", ");
    return this.name[v] + " = " + (this.shape[v] ? this.shape[v] + " " : "") + this.op[v] +
      "(" + inputs + ")" + (parts.length ? ", " + parts.join(", ") : "");
  };
  M.isFallback = function (v) { return (this.flags[v] & FLAG.fallback) !== 0; };
  M.isOutput = function (v) { return (this.flags[v] & FLAG.output) !== 0; };
  /** Node v's measured device time: {seconds, count, share, cellLine, code, file, line, rank
   * (1: the hottest), of (nodes measured)}, or null. */
  M.timeOf = function (v) {
    var ms = this.measured, i = ms ? ms.at[v] : -1;
    if (i < 0) return null;
    return { seconds: ms.seconds[i], count: ms.count[i], share: ms.share[i], cellLine: ms.cellLine[i],
      code: ms.code[i], file: ms.file[i], line: ms.line[i], rank: i + 1, of: ms.node.length };
  };
  /** Nodes whose name, op, shape, file, op_name or label holds `query` (case ignored), in
   * node order (Graph.find in Python: the same, the label aside). */
  M.find = function (query) {
    var q = query.trim().toLowerCase(), found = [], i;
    if (q && !this.haystack) {
      this.haystack = new Array(this.n);
      for (i = 0; i < this.n; i++) {
        this.haystack[i] = [this.name[i], this.op[i], this.shape[i], this.file[i], this.opName[i],
          this.label[i]].join("\u0001").toLowerCase();
      }
    }
    if (q) for (i = 0; i < this.n; i++) if (this.haystack[i].indexOf(q) >= 0) found.push(i);
    return found;
  };

  /** A number in a few significant characters (1.23 k, 4.5 M). */
  function fmt(x) {
    if (x === null || x === undefined || isNaN(x)) return "";
    if (x >= 1e12) return (x / 1e12).toFixed(2) + " T";
    if (x >= 1e9) return (x / 1e9).toFixed(2) + " G";
    if (x >= 1e6) return (x / 1e6).toFixed(2) + " M";
    if (x >= 1e3) return (x / 1e3).toFixed(1) + " k";
    return String(Math.round(x * 100) / 100);
  }

  /** A duration in seconds as people read it (3.73 s, 12.4 ms, 850 µs, 90 ns). */
  function fmtSeconds(x) {
    if (x === null || x === undefined || isNaN(x)) return "";
    var units = [[1, " s"], [1e-3, " ms"], [1e-6, " \u00b5s"], [1e-9, " ns"]], a = Math.abs(x);
    for (var i = 0; i < units.length - 1 && a < units[i][0] * 0.9995; i++);
    var v = x / units[i][0];
    return v.toFixed(Math.abs(v) >= 99.95 ? 0 : Math.abs(v) >= 9.995 ? 1 : 2) + units[i][1];
  }
  /** A fraction as a percentage (98.4%, 0.05%). */
  function fmtShare(x) {
    if (x === null || x === undefined || isNaN(x)) return "";
    var p = x * 100;
    return (p >= 10 ? p.toFixed(1) : p >= 0.1 ? p.toFixed(2) : p.toPrecision(1)) + "%";
  }

  /** Where an op came from as people know it (xlanb.formats.python_frames.place_name, less
   * the cell numbers): a notebook cell's file (ipykernel's temporary file, IPython's
   * <ipython-input-...>) as "notebook cell, line N", an installed library's file from its
   * install directory (torch/nn/modules/linear.py:134), anything else file:line. */
  function fmtSource(file, line) {
    if (!file) return "";
    if (/^<ipython-input|ipykernel_\d+[/\\]\d+\.py$/.test(file)) {
      return "notebook cell" + (line ? ", line " + line : "");
    }
    var installed = /[/\\](?:site|dist)-packages[/\\](.+)$/.exec(file);
    return (installed ? installed[1] : file) + (line ? ":" + line : "");
  }

  // ---- the viewer: declared here, its methods added by layout.js, render.js and ui.js -------
  function Viewer(el, data, options) { this.start(el, data, options); }

  ns.Model = Model;
  ns.decodeBuffer = decodeBuffer;
  ns.Viewer = Viewer;
  ns.FLAG = FLAG;
  ns.EDGE = EDGE;
  ns.DIFF = DIFF;
  ns.DIFF_STATES = DIFF_STATES;
  ns.edgeKinds = EDGE_KINDS;
  ns.fmt = fmt;
  ns.fmtSeconds = fmtSeconds;
  ns.fmtShare = fmtShare;
  ns.fmtSource = fmtSource;
})(typeof globalThis !== "undefined" ? globalThis : this);
