/* xlanb graph viewer (written for xlanb; no dependencies, no network). Reads the JSON that
 * xlanb.views.graph_viewer embeds in a <script type="application/json"> next to the viewer's
 * root element and draws the graph on a canvas: scopes (fusions, called computations, op_name
 * paths) collapsed at first, expandable one by one or all at once; pan, zoom, fit; search;
 * node details; CPU-fallback/host-callback ops in red; colouring by cost; diff marks. */
(function (root) {
  "use strict";
  var VERSION = "xlanb-graph-3";
  if (root.XlanbGraph && root.XlanbGraph.version === VERSION) return;
  var layered = root.XlanbGraphLayout.layered;

  // ---- constants ---------------------------------------------------------------------
  var CHAR = 6.7, NODE_H = 34, SCOPE_H = 38, PAD = 12, HEADER = 22, MAX_CHARS = 34;
  var FILL = ["#ffffff", "#e3f2fd", "#eeeeee", "#ffe0b2", "#ede7f6", "#e8f5e9", "#fce4ec",
    "#fff8e1", "#e0f7fa", "#f5f5f5"];
  var STROKE = ["#9e9e9e", "#64b5f6", "#bdbdbd", "#fb8c00", "#9575cd", "#66bb6a", "#ec407a",
    "#ffb300", "#26c6da", "#bdbdbd"];
  var CATEGORY = ["op", "parameter / input", "constant", "matmul / convolution",
    "fusion / call", "reduction", "control flow", "custom call", "collective", "data movement"];
  var DIFF_FILL = [null, "#c8e6c9", "#ffccbc", "#fff59d"];
  var DIFF_STROKE = [null, "#2e7d32", "#d84315", "#f9a825"];
  var DIFF_NAME = ["same", "added", "removed", "changed"];
  var FALLBACK_FILL = "#e53935", FALLBACK_STROKE = "#b71c1c";
  var SELECT = "#1565c0", NEIGHBOUR = "#42a5f5", MATCH = "#fdd835", CURRENT = "#ff6f00";
  var EDGE_KIND = ["data", "control", "param", "root"];

  // ---- model ---------------------------------------------------------------------------
  /** Decode the payload's column arrays; build scope trees and adjacency. */
  function Model(data) {
    var s = data.strings, nd = data.nodes, sc = data.scopes, i;
    function str(list) { return list.map(function (k) { return s[k]; }); }
    this.data = data;
    this.n = nd.name.length;
    this.name = str(nd.name); this.label = str(nd.label); this.op = str(nd.op);
    this.shape = str(nd.shape); this.opName = str(nd.opName); this.file = str(nd.file);
    this.func = str(nd.func); this.text = nd.text; this.attrs = nd.attrs;
    this.line = Int32Array.from(nd.line); this.order = Int32Array.from(nd.order);
    this.flags = Uint8Array.from(nd.flags); this.cat = Uint8Array.from(nd.cat);
    this.scope = Int32Array.from(nd.scope);
    this.cost = data.cost || {};
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
      if (this.eKind[i] === 2) {
        for (var q = this.scope[this.eDst[i]]; q >= 0; q = this.sParent[q]) {
          if (this.sAnchor[q] >= 0) { this.sHasBind[q] = 1; break; }
        }
      }
    }
    this.inputs = adjacency(n, this.eDst, this.eSrc, this.eKind);
    this.users = adjacency(n, this.eSrc, this.eDst, this.eKind);
    this.haystack = new Array(n);
    for (i = 0; i < n; i++) {
      this.haystack[i] = [this.name[i], this.op[i], this.shape[i], this.file[i], this.opName[i],
        this.label[i]].join("\u0001").toLowerCase();
    }
  }
  function adjacency(n, from, to, kind) {
    var lists = new Array(n);
    for (var i = 0; i < n; i++) lists[i] = [];
    for (i = 0; i < from.length; i++) if (kind[i] === 0 || kind[i] === 1) lists[from[i]].push(to[i]);
    return lists;
  }
  Model.prototype.scopePath = function (s) {
    var path = [];
    for (; s >= 0; s = this.sParent[s]) path.unshift(this.sLabel[s]);
    return path;
  };

  // ---- viewer --------------------------------------------------------------------------
  function Viewer(el, data, options) {
    this.el = el;
    this.options = options || {};
    this.m = new Model(data);
    this.expanded = new Uint8Array(this.m.S);
    this.layoutCache = new Map();  // scope -> layout, reused while its signature holds
    this.k = 1; this.tx = 0; this.ty = 0;
    this.selected = -1; this.selectedScope = -1;
    this.matches = []; this.matchIndex = -1; this.query = "";
    this.colorBy = data.options && data.options.colorBy || "";
    this.listeners = {};
    this.build();
    this.autoExpand();
    this.refresh(true);
    var self = this;
    this.resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(function () {
      self.resize(); }) : null;
    if (this.resizeObserver) this.resizeObserver.observe(this.stage);
    this.resize();
    this.fit(true);
    requestAnimationFrame(function () {
      self.draw();
      el.setAttribute("data-ready", "true");
      self.emit("ready", {});
    });
  }
  var V = Viewer.prototype;

  V.on = function (name, callback) { (this.listeners[name] = this.listeners[name] || []).push(callback); };
  V.emit = function (name, value) {
    (this.listeners[name] || []).forEach(function (cb) { cb(value); });
  };

  // -- DOM --------------------------------------------------------------------------------
  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  V.build = function () {
    var self = this, m = this.m, data = m.data, opts = data.options || {};
    var el = this.el;
    el.classList.add("xg-root");
    el.style.height = (opts.height || 520) + "px";
    var button = function (label, title, action, name) {
      return h("button", { type: "button", title: title, "data-action": name, text: label,
        onclick: function (ev) { ev.preventDefault(); action.call(self); } });
    };
    this.searchBox = h("input", { type: "search", placeholder: "search op, name, shape, file",
      "aria-label": "search nodes", cls: "xg-search" });
    var timer = null;
    this.searchBox.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { self.search(self.searchBox.value); }, 120);
    });
    this.searchBox.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") {
        ev.preventDefault();
        clearTimeout(timer);
        if (self.searchBox.value !== self.query) self.search(self.searchBox.value);
        if (ev.shiftKey) self.prevMatch(); else self.nextMatch();
      } else if (ev.key === "Escape") { self.searchBox.value = ""; self.search(""); }
    });
    this.matchLabel = h("span", { cls: "xg-count", "data-role": "match-count", text: "" });
    this.colorSelect = h("select", { "aria-label": "colour by", cls: "xg-color" });
    [["", "colour: op kind"], ["flops", "colour: FLOPs"], ["bytes", "colour: bytes"]]
      .concat(data.cost && data.cost.custom ? [["custom", "colour: " + (data.cost.customLabel || "cost")]] : [])
      .forEach(function (o) {
        var opt = h("option", { value: o[0], text: o[1] });
        if (o[0] === self.colorBy) opt.selected = true;
        self.colorSelect.appendChild(opt);
      });
    this.colorSelect.addEventListener("change", function () { self.setColorBy(self.colorSelect.value); });
    this.status = h("span", { cls: "xg-status", "data-role": "status" });
    var title = h("span", { cls: "xg-title", text: data.title || "", title: data.title || "" });
    this.toolbar = h("div", { cls: "xg-toolbar" }, [title,
      button("Fit", "fit the graph in view (F)", this.fit, "fit"),
      button("\u2212", "zoom out", function () { this.zoomBy(1 / 1.3); }, "zoom-out"),
      button("+", "zoom in", function () { this.zoomBy(1.3); }, "zoom-in"),
      button("Expand all", "expand every scope", this.expandAll, "expand-all"),
      button("Collapse all", "collapse every scope", this.collapseAll, "collapse-all"),
      this.searchBox,
      button("\u25c0", "previous match (Shift+Enter)", this.prevMatch, "prev"),
      button("\u25b6", "next match (Enter)", this.nextMatch, "next"),
      this.matchLabel, this.colorSelect, this.status]);
    this.canvas = h("canvas", { cls: "xg-canvas", tabindex: "0", "aria-label": "graph" });
    this.legend = h("div", { cls: "xg-legend", "data-role": "legend" });
    this.panel = h("div", { cls: "xg-panel", "data-role": "details", hidden: "" });
    this.summary = data.summary ? h("div", { cls: "xg-summary", "data-role": "summary", text: data.summary }) : null;
    this.stage = h("div", { cls: "xg-stage" }, [this.canvas, this.legend, this.panel]);
    el.appendChild(this.toolbar);
    if (this.summary) el.appendChild(this.summary);
    el.appendChild(this.stage);
    this.ctx = this.canvas.getContext("2d");
    this.bindPointer();
    this.renderLegend();
  };

  V.resize = function () {
    var rect = this.stage.getBoundingClientRect();
    var ratio = root.devicePixelRatio || 1;
    this.width = Math.max(50, rect.width); this.height = Math.max(50, rect.height);
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.canvas.style.width = this.width + "px"; this.canvas.style.height = this.height + "px";
    this.ratio = ratio;
    if (!this.userMoved) this.fit(true);
    this.requestDraw();
  };

  // -- expansion --------------------------------------------------------------------------
  /** Open scopes, biggest first, while the top level is too coarse to say anything (fewer
   * than a dozen boxes) and the view stays readable (at most 60 boxes). Fusions and other
   * called computations stay closed unless the whole graph is small. */
  V.autoExpand = function () {
    var m = this.m, self = this, budget = this.options.budget || 60, enough = 12;
    function opens(s) { return m.sAnchor[s] < 0; }
    var visible = m.topNodes.length + m.topScopes.filter(opens).length;
    function children(s) { return m.sNodes[s].length + m.sScopes[s].filter(opens).length; }
    var queue = m.topScopes.filter(opens);
    while (queue.length && visible < enough) {
      queue.sort(function (a, b) { return m.sSize[b] - m.sSize[a]; });
      var s = queue.shift(), extra = children(s) - 1;
      if (visible + extra > budget) continue;
      this.expanded[s] = 1; visible += extra;
      queue.push.apply(queue, m.sScopes[s].filter(opens));
    }
    if (m.n <= 45) this.expanded.fill(1);
  };

  V.toggle = function (s, open) {
    if (s < 0) return;
    var want = open === undefined ? !this.expanded[s] : !!open;
    if (!!this.expanded[s] === want) return;
    this.expanded[s] = want ? 1 : 0;
    this.refresh();
    this.emit("expand", { scope: s, expanded: want });
  };
  V.expandAll = function () {
    this.expanded.fill(1); this.layoutCache.clear();
    var t = performance.now();
    this.refresh();
    this.lastLayoutMs = performance.now() - t;
    this.fit();
  };
  V.collapseAll = function () {
    this.expanded.fill(0); this.layoutCache.clear(); this.refresh(); this.fit();
  };
  /** Expand every collapsed scope around node v so that it is drawn itself. */
  V.reveal = function (v) {
    var m = this.m, changed = false;
    for (var s = m.scope[v]; s >= 0; s = m.sParent[s]) {
      if (!this.expanded[s]) { this.expanded[s] = 1; changed = true; }
    }
    if (changed) this.refresh();
    return changed;
  };

  // -- visible structure and layout ---------------------------------------------------------
  /** Items (boxes drawn), clusters (expanded scopes), their nesting and the edges between
   * items; then the layout of each cluster, innermost first. */
  V.refresh = function (initial) {
    var m = this.m, n = m.n, S = m.S, i, s;
    var top = new Int32Array(S);  // outermost collapsed scope at or above s, -1 if none
    for (s = 0; s < S; s++) {
      var p = m.sParent[s];
      top[s] = (p >= 0 && top[p] >= 0) ? top[p] : (this.expanded[s] ? -1 : s);
    }
    var itemOfNode = new Int32Array(n).fill(-1), itemOfScope = new Int32Array(S).fill(-1);
    var kind = [], ref = [], container = [];
    var rep = new Int32Array(n);
    function scopeItem(a) {
      if (m.sAnchor[a] >= 0) return nodeItem(m.sAnchor[a], m.sParent[a]);
      if (itemOfScope[a] < 0) { itemOfScope[a] = kind.length; kind.push(1); ref.push(a); container.push(m.sParent[a]); }
      return itemOfScope[a];
    }
    var self = this;
    function nodeItem(v, parent) {
      if (itemOfNode[v] < 0) {
        var anchored = m.anchorOf[v];
        itemOfNode[v] = kind.length; kind.push(0); ref.push(v);
        container.push(parent !== undefined ? parent :
          (anchored >= 0 && self.expanded[anchored] && top[anchored] < 0) ? anchored : m.scope[v]);
      }
      return itemOfNode[v];
    }
    for (i = 0; i < n; i++) {
      s = m.scope[i];
      var a = s >= 0 ? top[s] : -1;
      rep[i] = a >= 0 ? scopeItem(a) : nodeItem(i);
    }
    var I = kind.length;
    // clusters: expanded scopes with every ancestor expanded
    var clusters = [], clusterIndex = new Int32Array(S).fill(-1);
    for (s = 0; s < S; s++) if (top[s] < 0) { clusterIndex[s] = clusters.length; clusters.push(s); }
    // elements: items 0..I-1, clusters I..; parent element and depth
    var C = clusters.length, parentEl = new Int32Array(I + C), depth = new Int32Array(I + C);
    function clusterEl(scope) { return scope >= 0 && clusterIndex[scope] >= 0 ? I + clusterIndex[scope] : -1; }
    for (i = 0; i < C; i++) {
      parentEl[I + i] = clusterEl(m.sParent[clusters[i]]);
      depth[I + i] = m.sDepth[clusters[i]] + 1;
    }
    for (i = 0; i < I; i++) {
      parentEl[i] = clusterEl(container[i]);
      depth[i] = parentEl[i] >= 0 ? depth[parentEl[i]] + 1 : 1;
    }
    // visible edges, deduplicated, each assigned to the cluster holding both ends
    var seen = new Map(), vis = [], edgeAt = new Map();
    for (i = 0; i < m.E; i++) {
      var u = rep[m.eSrc[i]], v = rep[m.eDst[i]];
      if (u === v) continue;
      var ek = m.eKind[i];
      if (ek === 0) {
        var bound = m.anchorOf[m.eDst[i]];
        if (bound >= 0 && this.expanded[bound] && top[bound] < 0 && m.sHasBind[bound] &&
            kind[v] === 0 && ref[v] === m.eDst[i]) continue;  // drawn via the callee's parameters
      }
      var key = u * I + v;
      if (seen.has(key)) continue;
      seen.set(key, vis.length);
      var ea = u, eb = v;
      while (depth[ea] > depth[eb]) ea = parentEl[ea];
      while (depth[eb] > depth[ea]) eb = parentEl[eb];
      while (parentEl[ea] !== parentEl[eb]) { ea = parentEl[ea]; eb = parentEl[eb]; }
      var at = parentEl[ea];
      var list = edgeAt.get(at);
      if (!list) { list = []; edgeAt.set(at, list); }
      list.push(vis.length);
      vis.push({ u: u, v: v, a: ea, b: eb, at: at, kind: ek, local: -1 });
    }
    var childrenOf = new Map();
    for (i = 0; i < I + C; i++) {
      var pe = parentEl[i], lst = childrenOf.get(pe);
      if (!lst) { lst = []; childrenOf.set(pe, lst); }
      lst.push(i);
    }
    var st = {
      I: I, C: C, kind: kind, ref: ref, rep: rep, clusters: clusters, parentEl: parentEl,
      depth: depth, edges: vis, edgeAt: edgeAt, childrenOf: childrenOf, itemOfNode: itemOfNode,
      w: new Float64Array(I + C), h: new Float64Array(I + C),
      cx: new Float64Array(I + C), cy: new Float64Array(I + C), matchCount: null
    };
    for (i = 0; i < I; i++) this.measure(st, i);
    this.st = st;
    this.layoutElement(-1);
    this.place(-1, 0, 0);
    this.updateMatches();
    var shown = 0;
    for (i = 0; i < I; i++) if (kind[i] === 0) shown++;
    this.status.textContent = shown.toLocaleString() + " of " + n.toLocaleString() + " nodes shown" +
      (I - shown ? ", " + (I - shown) + " collapsed scopes" : "");
    this.el.setAttribute("data-visible-items", String(I));
    this.el.setAttribute("data-visible-nodes", String(shown));
    if (!initial) this.requestDraw();
  };

  V.itemLines = function (st, i) {
    var m = this.m;
    if (st.kind[i] === 0) {
      var v = st.ref[i], sub = m.shape[v];
      var anchored = m.anchorOf[v];
      if (anchored >= 0 && !this.expanded[anchored]) sub = (sub ? sub + "  " : "") + "\u229e " + m.sSize[anchored];
      return [m.label[v], sub];
    }
    var s = st.ref[i];
    return [m.sLabel[s], "\u229e " + m.sSize[s] + " ops \u00b7 " + m.sKind[s]];
  };
  V.measure = function (st, i) {
    var lines = this.itemLines(st, i);
    var chars = Math.min(MAX_CHARS, Math.max(lines[0].length + (st.kind[i] ? 0 : 0), lines[1].length));
    st.w[i] = Math.max(70, 18 + chars * CHAR);
    st.h[i] = st.kind[i] === 0 ? NODE_H : SCOPE_H;
  };

  /** Lay out the children of cluster element `c` (-1: the top level), recursively. */
  V.layoutElement = function (c) {
    var st = this.st, m = this.m;
    var scope = c < 0 ? -1 : st.clusters[c - st.I];
    var kids = st.childrenOf.get(c) || [];
    for (var j = 0; j < kids.length; j++) if (kids[j] >= st.I) this.layoutElement(kids[j]);
    var local = new Map(), i;
    for (i = 0; i < kids.length; i++) local.set(kids[i], i);
    var edges = st.edgeAt.get(c) || [];
    // a cached layout is reused while the children, their sizes and the edges are the same
    var sig = kids.length * 7919 + edges.length;
    for (i = 0; i < kids.length; i++) {
      var el = kids[i];
      var code = el < st.I ? (st.kind[el] ? -1 - st.ref[el] : 1 + st.ref[el]) : 1e7 + st.clusters[el - st.I];
      sig = (Math.imul(sig, 31) + code + Math.round(st.w[el]) * 3 + Math.round(st.h[el])) | 0;
    }
    for (i = 0; i < edges.length; i++) {
      sig = (Math.imul(sig, 31) + local.get(st.edges[edges[i]].a) * 65599 + local.get(st.edges[edges[i]].b)) | 0;
    }
    var result = this.layoutCache.get(scope);
    if (!result || result.sig !== sig) {
      var k = kids.length, w = new Float64Array(k), hgt = new Float64Array(k), key = new Float64Array(k);
      for (i = 0; i < k; i++) {
        var e = kids[i];
        w[i] = st.w[e]; hgt[i] = st.h[e];
        key[i] = e < st.I ? (st.kind[e] === 0 ? m.order[st.ref[e]] : m.sMinOrder[st.ref[e]])
          : m.sMinOrder[st.clusters[e - st.I]];
      }
      var src = new Int32Array(edges.length), dst = new Int32Array(edges.length);
      for (i = 0; i < edges.length; i++) {
        src[i] = local.get(st.edges[edges[i]].a); dst[i] = local.get(st.edges[edges[i]].b);
      }
      result = layered(k, w, hgt, key, src, dst, {});
      result.sig = sig;
      this.layoutCache.set(scope, result);
    }
    for (i = 0; i < edges.length; i++) st.edges[edges[i]].local = i;
    st.layouts = st.layouts || new Map();
    st.layouts.set(c, { result: result, kids: kids, edges: edges });
    if (c >= 0) {
      st.w[c] = Math.max(result.width + 2 * PAD, 40 + Math.min(60, m.sLabel[scope].length) * CHAR);
      st.h[c] = result.height + HEADER + PAD;
    }
  };

  /** Absolute centres: the cluster's content starts at (left, top). */
  V.place = function (c, left, top) {
    var st = this.st, info = st.layouts.get(c), r = info.result;
    var inner = c >= 0 ? (st.w[c] - r.width) / 2 : 0;
    for (var i = 0; i < info.kids.length; i++) {
      var e = info.kids[i];
      st.cx[e] = left + inner + r.x[i];
      st.cy[e] = top + r.y[i];
      if (e >= st.I) this.place(e, st.cx[e] - st.w[e] / 2, st.cy[e] - st.h[e] / 2 + HEADER);
    }
    if (c < 0) { st.width = r.width; st.height = r.height; }
    info.left = left + inner; info.top = top;
  };

  // -- view transform ------------------------------------------------------------------------
  /** Fit the whole graph; with `readable`, never below the zoom where labels show (the
   * top of the graph then, centred). */
  V.fit = function (readable) {
    var st = this.st;
    if (!st || !this.width) return;
    var w = Math.max(st.width, 1) + 40, hh = Math.max(st.height, 1) + 40;
    this.k = Math.min(this.width / w, this.height / hh, 1.5);
    if (readable === true && this.k < 0.6) this.k = 0.6;
    this.tx = (this.width - st.width * this.k) / 2;
    this.ty = Math.max(10, (this.height - st.height * this.k) / 2);
    this.requestDraw();
  };
  V.zoomBy = function (factor, sx, sy) {
    if (sx === undefined) { sx = this.width / 2; sy = this.height / 2; }
    var k = Math.min(8, Math.max(0.002, this.k * factor));
    this.tx = sx - (sx - this.tx) * (k / this.k);
    this.ty = sy - (sy - this.ty) * (k / this.k);
    this.k = k;
    this.userMoved = true;
    this.requestDraw();
  };
  V.centerOn = function (item, minZoom) {
    var st = this.st;
    if (minZoom && this.k < minZoom) this.k = minZoom;
    this.tx = this.width / 2 - st.cx[item] * this.k;
    this.ty = this.height / 2 - st.cy[item] * this.k;
    this.userMoved = true;
    this.requestDraw();
  };
  /** Screen (client) coordinates of the centre of the box showing node `v`. */
  V.screenPoint = function (v) {
    var st = this.st, item = st.rep[v], rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + this.tx + st.cx[item] * this.k, y: rect.top + this.ty + st.cy[item] * this.k,
      item: item, self: st.kind[item] === 0 && st.ref[item] === v };
  };

  // -- pointer ---------------------------------------------------------------------------------
  V.bindPointer = function () {
    var self = this, canvas = this.canvas, drag = null;
    canvas.addEventListener("pointerdown", function (ev) {
      canvas.focus({ preventScroll: true });
      drag = { x: ev.clientX, y: ev.clientY, tx: self.tx, ty: self.ty, moved: false };
      if (canvas.setPointerCapture) try { canvas.setPointerCapture(ev.pointerId); } catch (e) { /* synthetic */ }
    });
    canvas.addEventListener("pointermove", function (ev) {
      if (!drag) { self.hover(ev); return; }
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) { self.tx = drag.tx + dx; self.ty = drag.ty + dy; self.userMoved = true; self.requestDraw(); }
    });
    canvas.addEventListener("pointerup", function (ev) {
      var was = drag; drag = null;
      if (was && !was.moved) self.click(ev, false);
    });
    canvas.addEventListener("dblclick", function (ev) { self.click(ev, true); });
    canvas.addEventListener("wheel", function (ev) {
      if (!ev.ctrlKey && !ev.metaKey && document.activeElement !== canvas) return;  // page scroll
      ev.preventDefault();
      var rect = canvas.getBoundingClientRect();
      self.zoomBy(Math.exp(-ev.deltaY * (ev.deltaMode ? 0.05 : 0.0015)), ev.clientX - rect.left, ev.clientY - rect.top);
    }, { passive: false });
    canvas.addEventListener("keydown", function (ev) {
      if (ev.key === "f" || ev.key === "F") self.fit();
      else if (ev.key === "+" || ev.key === "=") self.zoomBy(1.3);
      else if (ev.key === "-") self.zoomBy(1 / 1.3);
      else if (ev.key === "/") { ev.preventDefault(); self.searchBox.focus(); }
      else if (ev.key === "Escape") self.select(-1);
    });
  };

  /** What is under a screen point: {item} or {cluster, header} or null. */
  V.hit = function (sx, sy) {
    var st = this.st, x = (sx - this.tx) / this.k, y = (sy - this.ty) / this.k, i;
    for (i = 0; i < st.I; i++) {
      if (Math.abs(x - st.cx[i]) <= st.w[i] / 2 && Math.abs(y - st.cy[i]) <= st.h[i] / 2) {
        var badge = this.expandable(i) >= 0 && x > st.cx[i] + st.w[i] / 2 - 18 && y < st.cy[i] - st.h[i] / 2 + 16;
        return { item: i, badge: badge };
      }
    }
    var best = -1;
    for (i = st.I; i < st.I + st.C; i++) {
      if (Math.abs(x - st.cx[i]) <= st.w[i] / 2 && Math.abs(y - st.cy[i]) <= st.h[i] / 2 &&
          (best < 0 || st.depth[i] > st.depth[best])) best = i;
    }
    if (best >= 0) return { cluster: best, header: y < st.cy[best] - st.h[best] / 2 + HEADER };
    return null;
  };
  /** The collapsed scope an item stands for, or -1. */
  V.expandable = function (item) {
    var st = this.st, m = this.m;
    if (st.kind[item] === 1) return st.ref[item];
    var s = m.anchorOf[st.ref[item]];
    return s >= 0 && !this.expanded[s] ? s : -1;
  };
  V.click = function (ev, double) {
    var rect = this.canvas.getBoundingClientRect();
    var found = this.hit(ev.clientX - rect.left, ev.clientY - rect.top);
    if (!found) { if (double) this.fit(); else this.select(-1); return; }
    if (found.item !== undefined) {
      var scope = this.expandable(found.item);
      if ((double || found.badge) && scope >= 0) {
        var before = this.st.cx[found.item], beforeY = this.st.cy[found.item];
        this.toggle(scope, true);
        this.keepInPlace(scope, before, beforeY);
        return;
      }
      if (this.st.kind[found.item] === 0) this.select(this.st.ref[found.item]);
      else this.selectScope(this.st.ref[found.item]);
      return;
    }
    var cs = this.st.clusters[found.cluster - this.st.I];
    if (double && found.header) { this.toggle(cs, false); return; }
    if (found.header) this.selectScope(cs);
    else this.select(-1);
  };
  /** After expanding scope s, shift the view so the new cluster sits where its box was. */
  V.keepInPlace = function (s, x, y) {
    var st = this.st, el = -1;
    for (var i = 0; i < st.C; i++) if (st.clusters[i] === s) el = st.I + i;
    if (el < 0) return;
    var sx = this.tx + x * this.k, sy = this.ty + y * this.k;
    this.tx = sx - st.cx[el] * this.k;
    this.ty = sy - (st.cy[el] - st.h[el] / 2 + 20) * this.k;
    this.userMoved = true;
    this.requestDraw();
  };
  V.hover = function (ev) {
    var rect = this.canvas.getBoundingClientRect();
    var found = this.hit(ev.clientX - rect.left, ev.clientY - rect.top);
    var tip = "";
    if (found && found.item !== undefined) {
      var st = this.st, m = this.m, i = found.item;
      if (st.kind[i] === 0) {
        var v = st.ref[i];
        tip = m.name[v] + " = " + m.op[v] + (m.shape[v] ? " " + m.shape[v] : "") +
          (m.file[v] ? "\n" + m.file[v] + (m.line[v] ? ":" + m.line[v] : "") : "");
      } else tip = m.sLabel[st.ref[i]] + " (" + m.sSize[st.ref[i]] + " ops)";
      if (this.expandable(i) >= 0) tip += "\ndouble-click to expand";
    } else if (found) tip = this.m.sLabel[this.st.clusters[found.cluster - this.st.I]] + "\ndouble-click the title to collapse";
    this.canvas.title = tip;
    this.canvas.style.cursor = found && (found.item !== undefined || found.header) ? "pointer" : "grab";
  };

  // -- selection and details ---------------------------------------------------------------------
  V.select = function (v, options) {
    options = options || {};
    this.selected = v; this.selectedScope = -1;
    if (v >= 0 && options.reveal) {
      this.reveal(v);
      this.centerOn(this.st.rep[v], 0.8);
    }
    this.renderPanel();
    this.requestDraw();
    if (!options.silent) {
      this.emit("select", v >= 0 ? this.nodeInfo(v) : null);
      if (this.peerViewer && this.m.peer && v >= 0 && this.m.peer[v] >= 0) {
        this.peerViewer.select(this.m.peer[v], { reveal: true, silent: true });
      }
    }
  };
  V.selectScope = function (s) {
    this.selected = -1; this.selectedScope = s;
    this.renderPanel(); this.requestDraw();
  };
  V.selectByName = function (name) {
    var m = this.m;
    for (var i = 0; i < m.n; i++) if (m.name[i] === name) { this.select(i, { reveal: true }); return i; }
    return -1;
  };
  V.nodeInfo = function (v) {
    var m = this.m, attrs = {}, a = m.attrs[v] || [], s = m.data.strings;
    for (var i = 0; i + 1 < a.length; i += 2) attrs[s[a[i]]] = s[a[i + 1]];
    return {
      index: v, id: m.data.nodes.id ? s[m.data.nodes.id[v]] : m.name[v], name: m.name[v],
      op: m.op[v], shape: m.shape[v], scope: m.scopePath(m.scope[v]).join(" / "),
      op_name: m.opName[v], source_file: m.file[v], source_line: m.line[v] || null,
      source_function: m.func[v], attrs: attrs, text: m.text[v],
      fallback: !!(m.flags[v] & 2), diff: m.diff ? DIFF_NAME[m.diff[v]] : null
    };
  };

  V.renderPanel = function () {
    var panel = this.panel, m = this.m, self = this;
    panel.textContent = "";
    var close = h("button", { type: "button", cls: "xg-close", title: "close", text: "\u00d7",
      onclick: function () { self.select(-1); } });
    if (this.selected < 0 && this.selectedScope < 0) { panel.hidden = true; return; }
    panel.hidden = false;
    function row(key, value, role) {
      if (value === "" || value === null || value === undefined) return null;
      return h("div", { cls: "xg-row" }, [h("span", { cls: "xg-key", text: key }),
        h("span", { cls: "xg-value", text: String(value), "data-field": role || key })]);
    }
    if (this.selectedScope >= 0) {
      var s = this.selectedScope;
      panel.appendChild(h("div", { cls: "xg-head" }, [close, h("b", { text: m.sLabel[s] })]));
      panel.appendChild(row("kind", m.sKind[s], "kind"));
      panel.appendChild(row("ops", m.sSize[s], "ops"));
      panel.appendChild(row("scope", m.scopePath(m.sParent[s]).join(" / "), "scope"));
      panel.appendChild(h("button", { type: "button", "data-action": "toggle-scope",
        text: this.expanded[s] ? "Collapse" : "Expand",
        onclick: function () { self.toggle(s); self.renderPanel(); } }));
      return;
    }
    var v = this.selected, info = this.nodeInfo(v);
    panel.appendChild(h("div", { cls: "xg-head" }, [close, h("b", { text: m.label[v], "data-field": "label" })]));
    if (info.fallback) panel.appendChild(h("div", { cls: "xg-warn", text: "CPU fallback / host callback: runs on the host, outside the compiled graph" }));
    if (info.diff && info.diff !== "same") panel.appendChild(h("div", { cls: "xg-diff xg-diff-" + info.diff, text: info.diff }));
    [row("name", info.name), row("op", info.op), row("shape", info.shape),
      row("scope", info.scope), row("op_name", info.op_name),
      row("source", info.source_file ? info.source_file + (info.source_line ? ":" + info.source_line : "") +
        (info.source_function ? " (" + info.source_function + ")" : "") : "", "source"),
      row("FLOPs", fmt(m.cost.flops && m.cost.flops[v]), "flops"),
      row("bytes", fmt(m.cost.bytes && m.cost.bytes[v]), "bytes"),
      m.cost.custom ? row(m.cost.customLabel || "cost", fmt(m.cost.custom[v]), "custom") : null
    ].forEach(function (r) { if (r) panel.appendChild(r); });
    var keys = Object.keys(info.attrs);
    if (keys.length) {
      var table = h("table", { cls: "xg-attrs", "data-role": "attrs" });
      keys.forEach(function (k) {
        table.appendChild(h("tr", {}, [h("td", { text: k }), h("td", { text: info.attrs[k] })]));
      });
      panel.appendChild(h("div", { cls: "xg-sub", text: "attributes" }));
      panel.appendChild(table);
    }
    var links = function (title, list) {
      if (!list.length) return;
      var box = h("div", { cls: "xg-links", "data-role": title });
      box.appendChild(h("span", { cls: "xg-sub", text: title + " " }));
      list.slice(0, 40).forEach(function (u) {
        box.appendChild(h("a", { href: "#", text: m.name[u], title: m.op[u] + " " + m.shape[u],
          onclick: function (ev) { ev.preventDefault(); self.select(u, { reveal: true }); } }));
      });
      if (list.length > 40) box.appendChild(h("span", { text: " +" + (list.length - 40) }));
      panel.appendChild(box);
    };
    links("inputs", m.inputs[v]);
    links("users", m.users[v]);
    panel.appendChild(h("div", { cls: "xg-sub", text: "text" }));
    panel.appendChild(h("pre", { cls: "xg-text", "data-field": "text", text: info.text }));
  };
  function fmt(x) {
    if (x === null || x === undefined || isNaN(x)) return "";
    if (x >= 1e12) return (x / 1e12).toFixed(2) + " T";
    if (x >= 1e9) return (x / 1e9).toFixed(2) + " G";
    if (x >= 1e6) return (x / 1e6).toFixed(2) + " M";
    if (x >= 1e3) return (x / 1e3).toFixed(1) + " k";
    return String(Math.round(x * 100) / 100);
  }

  // -- search ---------------------------------------------------------------------------------
  V.search = function (query) {
    var m = this.m;
    this.query = query;
    var q = query.trim().toLowerCase(), found = [];
    if (q) for (var i = 0; i < m.n; i++) if (m.haystack[i].indexOf(q) >= 0) found.push(i);
    this.matches = found; this.matchIndex = -1;
    this.updateMatches();
    this.matchLabel.textContent = q ? (found.length ? "0/" + found.length : "no match") : "";
    this.requestDraw();
    this.emit("search", { query: query, matches: found.length });
    return found.length;
  };
  V.updateMatches = function () {
    var st = this.st;
    if (!st) return;
    var count = new Int32Array(st.I);
    for (var i = 0; i < this.matches.length; i++) count[st.rep[this.matches[i]]]++;
    st.matchCount = this.matches.length ? count : null;
  };
  V.nextMatch = function () { this.gotoMatch(this.matchIndex + 1); };
  V.prevMatch = function () { this.gotoMatch(this.matchIndex - 1 + (this.matchIndex < 0 ? this.matches.length + 1 : 0)); };
  V.gotoMatch = function (i) {
    var count = this.matches.length;
    if (!count) return;
    this.matchIndex = ((i % count) + count) % count;
    var v = this.matches[this.matchIndex];
    this.matchLabel.textContent = (this.matchIndex + 1) + "/" + count;
    this.select(v, { reveal: true });
  };

  // -- colour -----------------------------------------------------------------------------------
  V.setColorBy = function (what) {
    this.colorBy = what; this.colorSelect.value = what;
    this.renderLegend(); this.requestDraw();
  };
  V.costRange = function () {
    var values = this.m.cost[this.colorBy];
    if (!values) return null;
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var x = values[i];
      if (x !== null && x > 0) { if (x < lo) lo = x; if (x > hi) hi = x; }
    }
    return hi > 0 ? { lo: lo, hi: hi, values: values } : null;
  };
  function ramp(t) {  // light to dark blue
    var a = [227, 242, 253], b = [13, 71, 161];
    return "rgb(" + a.map(function (c, i) { return Math.round(c + (b[i] - c) * t); }).join(",") + ")";
  }
  V.renderLegend = function () {
    var legend = this.legend, m = this.m;
    legend.textContent = "";
    var swatch = function (fill, stroke, label, dashed) {
      return h("span", { cls: "xg-key-item" }, [h("i", { style: "background:" + fill + ";border-color:" + stroke +
        (dashed ? ";border-style:dashed" : "") }), document.createTextNode(label)]);
    };
    var range = this.colorBy ? this.costRange() : null;
    if (range) {
      legend.appendChild(h("span", { cls: "xg-key-item" }, [document.createTextNode(fmt(range.lo) + " "),
        h("b", { cls: "xg-ramp" }), document.createTextNode(" " + fmt(range.hi) + " " + (this.colorBy === "custom" ? (m.cost.customLabel || "cost") : this.colorBy) + " (log)")]));
    } else {
      var used = new Uint8Array(FILL.length);
      for (var i = 0; i < m.n; i++) used[m.cat[i]] = 1;
      for (i = 1; i < FILL.length; i++) if (used[i]) legend.appendChild(swatch(FILL[i], STROKE[i], CATEGORY[i]));
    }
    var fallbacks = 0;
    for (i = 0; i < m.n; i++) if (m.flags[i] & 2) fallbacks++;
    if (fallbacks) legend.appendChild(swatch(FALLBACK_FILL, FALLBACK_STROKE, "CPU fallback / host callback (" + fallbacks + ")"));
    if (m.diff) for (i = 1; i < 4; i++) legend.appendChild(swatch(DIFF_FILL[i], DIFF_STROKE[i], DIFF_NAME[i], i === 2));
    legend.hidden = !legend.childNodes.length;
  };

  // -- drawing ---------------------------------------------------------------------------------
  V.requestDraw = function () {
    if (this.pending) return;
    var self = this;
    this.pending = true;
    requestAnimationFrame(function () { self.pending = false; self.draw(); });
  };
  V.draw = function () {
    var st = this.st, m = this.m, ctx = this.ctx, k = this.k;
    if (!st || !ctx) return;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    ctx.fillStyle = "#fcfcfc";
    ctx.fillRect(0, 0, this.width, this.height);
    ctx.setTransform(this.ratio * k, 0, 0, this.ratio * k, this.ratio * this.tx, this.ratio * this.ty);
    var x0 = -this.tx / k, y0 = -this.ty / k, x1 = x0 + this.width / k, y1 = y0 + this.height / k;
    var i, detail = k * NODE_H >= 14, text = k >= 0.42;
    function inView(cx, cy, w, hh) { return cx + w / 2 >= x0 && cx - w / 2 <= x1 && cy + hh / 2 >= y0 && cy - hh / 2 <= y1; }
    // clusters, outermost first
    var order = [];
    for (i = st.I; i < st.I + st.C; i++) order.push(i);
    order.sort(function (a, b) { return st.depth[a] - st.depth[b]; });
    for (var c = 0; c < order.length; c++) {
      var e = order[c];
      if (!inView(st.cx[e], st.cy[e], st.w[e], st.h[e])) continue;
      var s = st.clusters[e - st.I], left = st.cx[e] - st.w[e] / 2, topY = st.cy[e] - st.h[e] / 2;
      ctx.fillStyle = st.depth[e] % 2 ? "rgba(250,246,232,0.85)" : "rgba(238,243,250,0.85)";
      ctx.strokeStyle = s === this.selectedScope ? SELECT : "#c7c2b0";
      ctx.lineWidth = (s === this.selectedScope ? 2.5 : 1) / Math.max(k, 0.3);
      roundRect(ctx, left, topY, st.w[e], st.h[e], 8);
      ctx.fill(); ctx.stroke();
      if (text) {
        ctx.fillStyle = "#5d4037";
        ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
        ctx.fillText(clip("\u229f " + m.sLabel[s] + "  (" + m.sKind[s] + ", " + m.sSize[s] + " ops)", (st.w[e] - 12) / CHAR), left + 8, topY + 15);
      }
    }
    // edges
    var sel = this.selected >= 0 ? st.rep[this.selected] : -1;
    var neighbours = new Set();
    var highlight = [];
    ctx.lineWidth = 1.1 / Math.max(k, 0.25);
    ctx.strokeStyle = "rgba(96,96,96,0.55)";
    ctx.beginPath();
    var back = [];
    for (i = 0; i < st.edges.length; i++) {
      var edge = st.edges[i];
      if (edge.u === sel || edge.v === sel) { highlight.push(edge); neighbours.add(edge.u === sel ? edge.v : edge.u); continue; }
      if (!this.edgeInView(edge, x0, y0, x1, y1)) continue;
      if (this.edgeReversed(edge)) { back.push(edge); continue; }
      this.tracePath(ctx, edge);
    }
    ctx.stroke();
    if (back.length) {
      ctx.setLineDash([5 / k, 4 / k]);
      ctx.strokeStyle = "rgba(120,90,160,0.6)";
      ctx.beginPath();
      for (i = 0; i < back.length; i++) this.tracePath(ctx, back[i]);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    if (highlight.length) {
      ctx.lineWidth = 2.2 / Math.max(k, 0.25);
      ctx.strokeStyle = SELECT;
      ctx.beginPath();
      for (i = 0; i < highlight.length; i++) this.tracePath(ctx, highlight[i]);
      ctx.stroke();
    }
    if (detail) {
      ctx.fillStyle = "rgba(80,80,80,0.8)";
      ctx.beginPath();
      for (i = 0; i < st.edges.length; i++) {
        var ed = st.edges[i];
        if (!inView(st.cx[ed.v], st.cy[ed.v], st.w[ed.v], st.h[ed.v])) continue;
        var ax = st.cx[ed.v], ay = st.cy[ed.v] - st.h[ed.v] / 2;
        if (this.edgeReversed(ed)) continue;
        ctx.moveTo(ax, ay); ctx.lineTo(ax - 3.5, ay - 6); ctx.lineTo(ax + 3.5, ay - 6); ctx.closePath();
      }
      ctx.fill();
    }
    // items
    var range = this.colorBy ? this.costRange() : null;
    var logLo = range ? Math.log(range.lo) : 0, logSpan = range ? Math.max(1e-9, Math.log(range.hi) - logLo) : 1;
    var current = this.matchIndex >= 0 ? st.rep[this.matches[this.matchIndex]] : -1;
    ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
    for (i = 0; i < st.I; i++) {
      var w = st.w[i], hh = st.h[i], cx = st.cx[i], cy = st.cy[i];
      if (!inView(cx, cy, w, hh)) continue;
      var isNode = st.kind[i] === 0, v = st.ref[i], cat = isNode ? m.cat[v] : 0;
      var fill = isNode ? FILL[cat] : "#fffde7", stroke = isNode ? STROKE[cat] : "#a1887f", ink = "#212121";
      var dashed = false;
      if (range && isNode) {
        var val = range.values[v];
        if (val !== null && val > 0) {
          var t = (Math.log(val) - logLo) / logSpan;
          fill = ramp(t); if (t > 0.55) ink = "#ffffff";
        } else fill = "#ffffff";
      }
      var diffState = this.diffState(i);
      if (diffState > 0) { fill = DIFF_FILL[diffState]; stroke = DIFF_STROKE[diffState]; dashed = diffState === 2; ink = "#212121"; }
      var fallback = isNode ? (m.flags[v] & 2) : this.scopeHasFallback(v);
      if (fallback && isNode) { fill = FALLBACK_FILL; stroke = FALLBACK_STROKE; ink = "#ffffff"; }
      else if (fallback) { stroke = FALLBACK_STROKE; }
      var lw = 1;
      if (st.matchCount && st.matchCount[i]) { stroke = i === current ? CURRENT : "#f9a825"; lw = i === current ? 4 : 3; }
      if (neighbours.has(i)) { stroke = NEIGHBOUR; lw = 2.5; }
      if (i === sel) { stroke = SELECT; lw = 3.5; }
      if (isNode && (m.flags[v] & 1) && lw === 1) lw = 2;
      if (!detail) {
        ctx.fillStyle = st.matchCount && st.matchCount[i] ? MATCH : (i === sel ? SELECT : (fallback ? FALLBACK_FILL : stroke));
        ctx.fillRect(cx - w / 2, cy - hh / 2, w, hh);
        continue;
      }
      if (st.matchCount && st.matchCount[i]) {
        ctx.fillStyle = "rgba(253,216,53,0.55)";
        roundRect(ctx, cx - w / 2 - 5, cy - hh / 2 - 5, w + 10, hh + 10, 9);
        ctx.fill();
      }
      ctx.fillStyle = fill; ctx.strokeStyle = stroke; ctx.lineWidth = lw;
      if (dashed) ctx.setLineDash([4, 3]);
      roundRect(ctx, cx - w / 2, cy - hh / 2, w, hh, isNode ? 5 : 3);
      ctx.fill(); ctx.stroke();
      if (dashed) ctx.setLineDash([]);
      if (!isNode) {  // a stack: scopes look like piles of boxes
        ctx.beginPath(); ctx.moveTo(cx - w / 2 + 4, cy + hh / 2 + 3); ctx.lineTo(cx + w / 2 + 3, cy + hh / 2 + 3);
        ctx.lineTo(cx + w / 2 + 3, cy - hh / 2 + 4); ctx.lineWidth = 1; ctx.strokeStyle = "#a1887f"; ctx.stroke();
      }
      if (this.expandable(i) >= 0) {
        ctx.fillStyle = ink === "#ffffff" ? "#ffffff" : "#6d4c41";
        ctx.font = "bold 12px sans-serif";
        ctx.fillText("+", cx + w / 2 - 12, cy - hh / 2 + 12);
        ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
      }
      if (text) {
        var lines = this.itemLines(st, i), maxChars = (w - 14) / CHAR;
        ctx.fillStyle = ink;
        ctx.textAlign = "center";
        ctx.fillText(clip(lines[0], maxChars), cx, cy - 3);
        if (lines[1]) {
          ctx.font = "10px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
          ctx.fillStyle = ink === "#ffffff" ? "#ffebee" : "#616161";
          ctx.fillText(clip(lines[1], maxChars + 2), cx, cy + 11);
          ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
        }
        ctx.textAlign = "left";
        if (st.matchCount && st.matchCount[i] > 1 && !isNode) {
          ctx.fillStyle = CURRENT;
          ctx.fillText(st.matchCount[i] + " matches", cx - w / 2, cy - hh / 2 - 7);
        }
      }
    }
    this.el.setAttribute("data-zoom", k.toFixed(3));
  };
  V.diffState = function (item) {
    var st = this.st, m = this.m;
    if (!m.diff) return 0;
    if (st.kind[item] === 0) {
      var v = st.ref[item];
      var own = m.diff[v];
      if (own) return own;
      var s = m.anchorOf[v];
      return s >= 0 && !this.expanded[s] ? this.scopeDiff(s) : 0;
    }
    return this.scopeDiff(st.ref[item]);
  };
  V.scopeDiff = function (s) {
    if (!this.scopeDiffCache) {
      var m = this.m, cache = new Int8Array(m.S);
      for (var i = 0; i < m.n; i++) {
        if (!m.diff[i]) continue;
        for (var p = m.scope[i]; p >= 0; p = m.sParent[p]) if (!cache[p]) cache[p] = 3;
      }
      this.scopeDiffCache = cache;
    }
    return this.scopeDiffCache[s];
  };
  V.scopeHasFallback = function (s) {
    if (!this.fallbackCache) {
      var m = this.m, cache = new Uint8Array(m.S);
      for (var i = 0; i < m.n; i++) {
        if (!(m.flags[i] & 2)) continue;
        for (var p = m.scope[i]; p >= 0; p = m.sParent[p]) cache[p] = 1;
      }
      this.fallbackCache = cache;
    }
    return this.fallbackCache[s];
  };
  V.edgeReversed = function (edge) {
    var info = this.st.layouts.get(edge.at);
    return info && info.result.reversed[edge.local];
  };
  V.edgeInView = function (edge, x0, y0, x1, y1) {
    var st = this.st;
    var ax = st.cx[edge.u], ay = st.cy[edge.u], bx = st.cx[edge.v], by = st.cy[edge.v];
    return !(Math.max(ax, bx) < x0 - 200 || Math.min(ax, bx) > x1 + 200 ||
      Math.max(ay, by) < y0 || Math.min(ay, by) > y1);
  };
  /** Points of an edge: out of the source's bottom, through the route's bends, into the
   * target's top (leaving and entering clusters vertically). */
  V.tracePath = function (ctx, edge) {
    var st = this.st, info = st.layouts.get(edge.at);
    var sx = st.cx[edge.u], sy = st.cy[edge.u] + st.h[edge.u] / 2;
    var tx = st.cx[edge.v], ty = st.cy[edge.v] - st.h[edge.v] / 2;
    var pts = [sx, sy];
    if (edge.a !== edge.u) pts.push(sx, st.cy[edge.a] + st.h[edge.a] / 2);
    var route = info ? info.result.routes[info.result.group[edge.local]] : null;
    if (route && route.length) {
      var ox = info.left, oy = info.top;
      if (this.edgeReversed(edge)) {
        for (var r = route.length - 2; r >= 0; r -= 2) pts.push(ox + route[r], oy + route[r + 1]);
      } else {
        for (r = 0; r < route.length; r += 2) pts.push(ox + route[r], oy + route[r + 1]);
      }
    }
    if (edge.b !== edge.v) pts.push(tx, st.cy[edge.b] - st.h[edge.b] / 2);
    pts.push(tx, ty);
    ctx.moveTo(pts[0], pts[1]);
    for (var p = 2; p < pts.length; p += 2) {
      var px = pts[p - 2], py = pts[p - 1], qx = pts[p], qy = pts[p + 1];
      var bend = Math.max(12, Math.abs(qy - py) / 2);
      ctx.bezierCurveTo(px, py + bend, qx, qy - bend, qx, qy);
    }
  };
  function roundRect(ctx, x, y, w, hh, r) {
    ctx.beginPath();
    ctx.moveTo(x + r, y); ctx.lineTo(x + w - r, y); ctx.quadraticCurveTo(x + w, y, x + w, y + r);
    ctx.lineTo(x + w, y + hh - r); ctx.quadraticCurveTo(x + w, y + hh, x + w - r, y + hh);
    ctx.lineTo(x + r, y + hh); ctx.quadraticCurveTo(x, y + hh, x, y + hh - r);
    ctx.lineTo(x, y + r); ctx.quadraticCurveTo(x, y, x + r, y); ctx.closePath();
  }
  function clip(s, max) {
    max = Math.max(3, Math.floor(max));
    return s.length > max ? s.slice(0, max - 1) + "\u2026" : s;
  }

  // ---- mounting --------------------------------------------------------------------------
  /** Start the viewer in `el` (a .xlanb-graph element holding its JSON payload). */
  function mount(el) {
    if (el.xlanbViewer || el.getAttribute("data-mounted")) return el.xlanbViewer;
    el.setAttribute("data-mounted", "true");
    var note = el.querySelector(".xg-static");
    if (note) note.parentNode.removeChild(note);
    var script = el.querySelector("script[type='application/json']");
    var data = JSON.parse(script.textContent);
    var viewer = new Viewer(el, data);
    el.xlanbViewer = viewer;
    var group = el.getAttribute("data-diff-group");
    if (group) {
      var peers = document.querySelectorAll(".xlanb-graph[data-diff-group='" + group + "']");
      for (var i = 0; i < peers.length; i++) {
        var other = peers[i].xlanbViewer;
        if (other && other !== viewer) { viewer.peerViewer = other; other.peerViewer = viewer; }
      }
    }
    return viewer;
  }
  function mountAll(doc) {
    var found = (doc || document).querySelectorAll(".xlanb-graph:not([data-mounted])");
    for (var i = 0; i < found.length; i++) {
      try { mount(found[i]); } catch (error) {
        found[i].setAttribute("data-error", String(error));
        var note = document.createElement("pre");
        note.className = "xg-error";
        note.textContent = "xlanb graph viewer failed: " + error;
        found[i].appendChild(note);
      }
    }
  }
  root.XlanbGraph = { version: VERSION, Viewer: Viewer, Model: Model, mount: mount, mountAll: mountAll,
    edgeKinds: EDGE_KIND };
})(typeof globalThis !== "undefined" ? globalThis : this);
