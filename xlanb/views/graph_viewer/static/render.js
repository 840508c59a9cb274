/* xlanb graph viewer, 3 of 4: the canvas. The view transform (fit, zoom, centre), colours
 * (light and dark themes: the op-kind palette, the cost ramp, the heat ramp of measured
 * device time, fallback and diff marks) and drawing: clusters, edges and boxes, only what is
 * in view, with less detail when zoomed out. */
(function (root) {
  "use strict";
  var ns = root.XlanbGraph;
  if (ns.complete) return;
  var DIFF = ns.DIFF, DIFF_STATES = ns.DIFF_STATES;
  var CHAR = ns.GEOMETRY.CHAR, NODE_H = ns.GEOMETRY.NODE_H;
  var V = ns.Viewer.prototype;

  // ---- palette ---------------------------------------------------------------------------
  /** The canvas colours of the light theme (the viewer on a light page) and the dark one (on
   * a dark page: JupyterLab Dark, VS Code dark, a report under prefers-color-scheme: dark). */
  var THEMES = {
    light: {
      background: "#fcfcfc", ink: "#212121", subInk: "#616161", badge: "#6d4c41",
      cluster: ["rgba(238,243,250,0.85)", "rgba(250,246,232,0.85)"], clusterStroke: "#c7c2b0",
      clusterInk: "#5d4037", scopeFill: "#fffde7", scopeStroke: "#a1887f",
      edge: "rgba(96,96,96,0.55)", backEdge: "rgba(120,90,160,0.6)", arrow: "rgba(80,80,80,0.8)",
      unmeasured: "#ffffff", matchHalo: "rgba(253,216,53,0.55)", matchStroke: "#f9a825",
      select: "#1565c0", neighbour: "#42a5f5",
      // cost ramps, cold to hot: blue for FLOPs, bytes and your own cost; amber to brown for
      // measured device time (hot boxes darkest, apart from the red of a fallback)
      ramp: [[227, 242, 253], [13, 71, 161]],
      heat: [[255, 247, 188], [254, 227, 145], [254, 196, 79], [236, 112, 20], [140, 45, 4]]
    },
    dark: {
      background: "#1e1e1e", ink: "#eeeeee", subInk: "#bdbdbd", badge: "#ffcc80",
      cluster: ["rgba(40,48,60,0.85)", "rgba(56,50,38,0.85)"], clusterStroke: "#6d6757",
      clusterInk: "#d7ccc8", scopeFill: "#3a3624", scopeStroke: "#a1887f",
      edge: "rgba(190,190,190,0.5)", backEdge: "rgba(179,157,219,0.65)", arrow: "rgba(200,200,200,0.8)",
      unmeasured: "#2a2a2a", matchHalo: "rgba(253,216,53,0.4)", matchStroke: "#fdd835",
      select: "#64b5f6", neighbour: "#90caf9",
      // on dark, hot is bright
      ramp: [[22, 40, 64], [30, 118, 196], [187, 222, 251]],
      heat: [[58, 40, 18], [122, 59, 6], [217, 100, 15], [251, 154, 41], [255, 224, 138]]
    }
  };
  /** Fill, stroke and legend label of each op category, by the name payload.py sends
   * (xlanb.graphs.ops.CATEGORIES); a name this table lacks is drawn as a plain op. */
  var CATEGORY_STYLE = {
    op: { fill: "#ffffff", stroke: "#9e9e9e", dark: "#2b2b2b", label: "op" },
    parameter: { fill: "#e3f2fd", stroke: "#64b5f6", dark: "#1a3550", label: "parameter / input" },
    constant: { fill: "#eeeeee", stroke: "#bdbdbd", dark: "#333333", label: "constant" },
    contraction: { fill: "#ffe0b2", stroke: "#fb8c00", dark: "#4a3010", label: "matmul / convolution" },
    call: { fill: "#ede7f6", stroke: "#9575cd", dark: "#30284a", label: "fusion / call" },
    reduction: { fill: "#e8f5e9", stroke: "#66bb6a", dark: "#1d3a21", label: "reduction" },
    control: { fill: "#fce4ec", stroke: "#ec407a", dark: "#4a1d2c", label: "control flow" },
    custom_call: { fill: "#fff8e1", stroke: "#ffb300", dark: "#473a10", label: "custom call" },
    collective: { fill: "#e0f7fa", stroke: "#26c6da", dark: "#0f3c42", label: "collective" },
    data_movement: { fill: "#f5f5f5", stroke: "#bdbdbd", dark: "#2e2e2e", label: "data movement" }
  };
  /** Marks of the diff states (a diff's nodes; "same" is drawn as usual). */
  var DIFF_STYLE = {
    added: { fill: "#c8e6c9", stroke: "#2e7d32", dark: "#1f4a22", darkStroke: "#66bb6a" },
    removed: { fill: "#ffccbc", stroke: "#d84315", dark: "#55261a", darkStroke: "#ff7043", dashed: true },
    changed: { fill: "#fff59d", stroke: "#f9a825", dark: "#4f4812", darkStroke: "#fdd835" }
  };
  var FALLBACK = { fill: "#e53935", stroke: "#b71c1c" };
  var MATCH = "#fdd835", CURRENT = "#ff6f00";

  /** The theme's colours; `dark` switches them (ui.js follows the page). */
  V.setTheme = function (dark) {
    this.dark = !!dark;
    this.theme = THEMES[this.dark ? "dark" : "light"];
    this.catStyles = null;
    this.el.classList.toggle("xg-dark", this.dark);
    if (this.legend) this.renderLegend();
    if (this.st) this.requestDraw();
  };
  /** The style of each category index of this viewer's payload, in the current theme. */
  V.categoryStyles = function () {
    if (!this.catStyles) {
      var dark = this.dark;
      this.catStyles = this.m.categories.map(function (name) {
        var style = CATEGORY_STYLE[name] || CATEGORY_STYLE.op;
        return { name: name, fill: dark ? style.dark : style.fill, stroke: style.stroke,
          label: CATEGORY_STYLE[name] ? style.label : name };
      });
    }
    return this.catStyles;
  };
  /** Fill and stroke of a diff state in the current theme; null for "same". */
  V.diffStyle = function (state) {
    var style = state > 0 ? DIFF_STYLE[DIFF_STATES[state]] : null;
    if (!style) return null;
    return this.dark ? { fill: style.dark, stroke: style.darkStroke, dashed: style.dashed } : style;
  };

  // -- canvas size -----------------------------------------------------------------------------
  V.resize = function () {
    var rect = this.stage.getBoundingClientRect();
    var ratio = root.devicePixelRatio || 1;
    this.width = Math.max(50, rect.width); this.height = Math.max(50, rect.height);
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.canvas.style.width = this.width + "px"; this.canvas.style.height = this.height + "px";
    this.ratio = ratio;
    if (!this.userMoved) this.fit();
    this.requestDraw();
  };

  // -- view transform ------------------------------------------------------------------------
  /** The zoom at which labels (11 px fonts in graph units) are 11 px on screen. */
  var READABLE = 1;
  /** The least zoom Fit goes to on its own: labels at 8.8 px. */
  var LEGIBLE = 0.8;
  /** The zoom and offsets that show the graph: the whole graph when it fits at LEGIBLE or more
   * (at most 1.5); else its top at the zoom that fits its width,
   * between LEGIBLE and READABLE, centred, or around its top row when it is wider still (where
   * it starts: the middle of a step whose outputs fan out wide below, the left edge of one
   * whose inputs fill its top row). With `whole`: the whole graph, however small its labels. */
  V.fitView = function (whole) {
    var st = this.st, margin = 20;  // screen px on every side
    var w = Math.max(st.width, 1), hh = Math.max(st.height, 1);
    var byWidth = (this.width - 2 * margin) / w, byHeight = (this.height - 2 * margin) / hh;
    var k = Math.max(0.002, Math.min(byWidth, byHeight, 1.5));
    if (!whole && k < LEGIBLE) k = Math.max(LEGIBLE, Math.min(byWidth, READABLE));
    var tx = (this.width - st.width * k) / 2;
    if (st.width * k > this.width - 2 * margin) {
      var row = this.topRow();
      tx = this.width / 2 - (row.lo + row.hi) / 2 * k;
      tx = Math.min(margin, Math.max(this.width - margin - st.width * k, tx));
    }
    return { k: k, tx: tx, ty: Math.max(margin, (this.height - st.height * k) / 2) };
  };
  /** The left and right ends, in graph units, of the boxes in the laid-out graph's top row. */
  V.topRow = function () {
    var st = this.st, n = st.cx.length, top = Infinity, lo = Infinity, hi = -Infinity, i;
    for (i = 0; i < n; i++) top = Math.min(top, st.cy[i] - st.h[i] / 2);
    for (i = 0; i < n; i++) {
      if (st.cy[i] - st.h[i] / 2 > top + st.h[i] / 2) continue;
      lo = Math.min(lo, st.cx[i] - st.w[i] / 2); hi = Math.max(hi, st.cx[i] + st.w[i] / 2);
    }
    return n && hi >= lo ? { lo: lo, hi: hi } : { lo: 0, hi: 0 };
  };
  /** Show the graph as fitView(`whole`) has it (Fit, F; Shift+F: the whole graph). */
  V.fit = function (whole) {
    if (!this.st || !this.width) return;
    var view = this.fitView(whole === true);
    this.k = view.k; this.tx = view.tx; this.ty = view.ty;
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

  // -- colour ---------------------------------------------------------------------------------
  /** The positive values of the cost coloured by, their least and greatest; null if none. */
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
  /** The stops of the ramp of what is coloured by (measured time: heat, else blue). */
  V.rampStops = function () { return this.colorBy === "time" ? this.theme.heat : this.theme.ramp; };
  /** The colour at t in [0, 1] along `stops`, and the ink that reads on it. */
  function along(stops, t) {
    var x = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x));
    var f = x - i, a = stops[i], b = stops[i + 1], rgb = [0, 1, 2].map(function (c) {
      return Math.round(a[c] + (b[c] - a[c]) * f);
    });
    return { fill: "rgb(" + rgb.join(",") + ")", ink: luminance(rgb) > 0.18 ? "#212121" : "#ffffff" };
  }
  function luminance(rgb) {
    var lin = rgb.map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  }
  /** The CSS gradient of the current ramp (the legend's key). */
  V.rampGradient = function () {
    return "linear-gradient(90deg, " + this.rampStops().map(function (c) { return "rgb(" + c.join(",") + ")"; }).join(", ") + ")";
  };
  /** Per scope, the sum of the values coloured by over the nodes inside (measured time only:
   * a collapsed scope is as hot as what it holds). */
  V.scopeCost = function (values) {
    if (this.scopeCostOf !== values) {
      var m = this.m, sums = new Float64Array(m.S);
      for (var i = 0; i < m.n; i++) {
        var x = values[i];
        if (x === null || !(x > 0)) continue;
        for (var p = m.scope[i]; p >= 0; p = m.sParent[p]) sums[p] += x;
      }
      this.scopeCostOf = values; this.scopeCostSums = sums;
    }
    return this.scopeCostSums;
  };

  // -- drawing ---------------------------------------------------------------------------------
  V.requestDraw = function () {
    if (this.pending) return;
    var self = this;
    this.pending = true;
    requestAnimationFrame(function () { self.pending = false; self.draw(); });
  };
  V.draw = function () {
    var st = this.st, ctx = this.ctx, k = this.k, th = this.theme;
    if (!st || !ctx) return;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    ctx.fillStyle = th.background;
    ctx.fillRect(0, 0, this.width, this.height);
    ctx.setTransform(this.ratio * k, 0, 0, this.ratio * k, this.ratio * this.tx, this.ratio * this.ty);
    var x0 = -this.tx / k, y0 = -this.ty / k, x1 = x0 + this.width / k, y1 = y0 + this.height / k;
    var view = {
      x0: x0, y0: y0, x1: x1, y1: y1, detail: k * NODE_H >= 14, text: k >= 0.42,
      inView: function (cx, cy, w, hh) { return cx + w / 2 >= x0 && cx - w / 2 <= x1 && cy + hh / 2 >= y0 && cy - hh / 2 <= y1; }
    };
    this.drawClusters(view);
    var near = this.drawEdges(view);
    this.drawItems(view, near.sel, near.neighbours);
    this.el.setAttribute("data-zoom", k.toFixed(3));
  };
  /** The open scopes' clusters, outermost first. */
  V.drawClusters = function (view) {
    var st = this.st, m = this.m, ctx = this.ctx, k = this.k, th = this.theme;
    var SELECT = th.select, inView = view.inView, text = view.text, i;
    var order = [];
    for (i = st.I; i < st.I + st.C; i++) order.push(i);
    order.sort(function (a, b) { return st.depth[a] - st.depth[b]; });
    for (var c = 0; c < order.length; c++) {
      var e = order[c];
      if (!inView(st.cx[e], st.cy[e], st.w[e], st.h[e])) continue;
      var s = st.clusters[e - st.I], left = st.cx[e] - st.w[e] / 2, topY = st.cy[e] - st.h[e] / 2;
      ctx.fillStyle = th.cluster[st.depth[e] % 2];
      ctx.strokeStyle = s === this.selectedScope ? SELECT : th.clusterStroke;
      ctx.lineWidth = (s === this.selectedScope ? 2.5 : 1) / Math.max(k, 0.3);
      roundRect(ctx, left, topY, st.w[e], st.h[e], 8);
      ctx.fill(); ctx.stroke();
      if (text) {
        ctx.fillStyle = th.clusterInk;
        ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
        ctx.fillText(clip("\u229f " + m.sLabel[s] + "  (" + m.sKind[s] + ", " + m.sSize[s] + " ops)", (st.w[e] - 12) / CHAR), left + 8, topY + 15);
      }
    }
  };
  /** The edges: the selection's highlighted, reversed ones dashed, arrow heads when close
   * enough; returns the selected item (-1: none) and its neighbours. */
  V.drawEdges = function (view) {
    var st = this.st, ctx = this.ctx, k = this.k, th = this.theme;
    var SELECT = th.select, inView = view.inView, i;
    var x0 = view.x0, y0 = view.y0, x1 = view.x1, y1 = view.y1;
    var sel = this.selected >= 0 ? st.rep[this.selected] : -1;
    var neighbours = new Set();
    var highlight = [];
    ctx.lineWidth = 1.1 / Math.max(k, 0.25);
    ctx.strokeStyle = th.edge;
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
      ctx.strokeStyle = th.backEdge;
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
    if (view.detail) {
      ctx.fillStyle = th.arrow;
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
    return { sel: sel, neighbours: neighbours };
  };
  /** The boxes: nodes and closed scopes, coloured by category, cost, diff state, fallback,
   * search matches and the selection; their text when close enough. */
  V.drawItems = function (view, sel, neighbours) {
    var st = this.st, m = this.m, ctx = this.ctx, th = this.theme;
    var SELECT = th.select, inView = view.inView, detail = view.detail, text = view.text, i;
    var range = this.colorBy ? this.costRange() : null;
    var styles = this.categoryStyles(), stops = this.rampStops();
    var logLo = range ? Math.log(range.lo) : 0, logSpan = range ? Math.max(1e-9, Math.log(range.hi) - logLo) : 1;
    var sums = range && this.colorBy === "time" ? this.scopeCost(range.values) : null;
    var current = this.matchIndex >= 0 ? st.rep[this.matches[this.matchIndex]] : -1;
    ctx.font = "bold 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
    for (i = 0; i < st.I; i++) {
      var w = st.w[i], hh = st.h[i], cx = st.cx[i], cy = st.cy[i];
      if (!inView(cx, cy, w, hh)) continue;
      var isNode = st.kind[i] === 0, v = st.ref[i], cat = isNode ? m.cat[v] : 0;
      var fill = isNode ? styles[cat].fill : th.scopeFill, stroke = isNode ? styles[cat].stroke : th.scopeStroke;
      var ink = th.ink, dashed = false;
      if (range && (isNode || sums)) {
        var val = isNode ? range.values[v] : sums[v];
        if (val !== null && val > 0) {
          var paint = along(stops, (Math.log(val) - logLo) / logSpan);
          fill = paint.fill; ink = paint.ink;
        } else if (isNode) fill = th.unmeasured;
      }
      var diffState = this.diffState(i);
      var marked = this.diffStyle(diffState);
      if (marked) { fill = marked.fill; stroke = marked.stroke; dashed = !!marked.dashed; ink = th.ink; }
      var fallback = isNode ? m.isFallback(v) : this.scopeHasFallback(v);
      if (fallback && isNode) { fill = FALLBACK.fill; stroke = FALLBACK.stroke; ink = "#ffffff"; }
      else if (fallback) { stroke = FALLBACK.stroke; }
      var lw = 1;
      if (st.matchCount && st.matchCount[i]) { stroke = i === current ? CURRENT : th.matchStroke; lw = i === current ? 4 : 3; }
      if (neighbours.has(i)) { stroke = th.neighbour; lw = 2.5; }
      if (i === sel) { stroke = SELECT; lw = 3.5; }
      if (isNode && m.isOutput(v) && lw === 1) lw = 2;
      if (!detail) {
        ctx.fillStyle = st.matchCount && st.matchCount[i] ? MATCH : (i === sel ? SELECT : (fallback ? FALLBACK.fill : stroke));
        ctx.fillRect(cx - w / 2, cy - hh / 2, w, hh);
        continue;
      }
      if (st.matchCount && st.matchCount[i]) {
        ctx.fillStyle = th.matchHalo;
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
        ctx.lineTo(cx + w / 2 + 3, cy - hh / 2 + 4); ctx.lineWidth = 1; ctx.strokeStyle = th.scopeStroke; ctx.stroke();
      }
      if (this.expandable(i) >= 0) {
        ctx.fillStyle = ink === th.ink ? th.badge : ink;
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
          ctx.fillStyle = ink === th.ink ? th.subInk : ink === "#ffffff" ? "#ffebee" : "#424242";
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
        for (var p = m.scope[i]; p >= 0; p = m.sParent[p]) if (!cache[p]) cache[p] = DIFF.changed;
      }
      this.scopeDiffCache = cache;
    }
    return this.scopeDiffCache[s];
  };
  V.scopeHasFallback = function (s) {
    if (!this.fallbackCache) {
      var m = this.m, cache = new Uint8Array(m.S);
      for (var i = 0; i < m.n; i++) {
        if (!m.isFallback(i)) continue;
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

  ns.palette = { themes: THEMES, category: CATEGORY_STYLE, diff: DIFF_STYLE, fallback: FALLBACK };
})(typeof globalThis !== "undefined" ? globalThis : this);
