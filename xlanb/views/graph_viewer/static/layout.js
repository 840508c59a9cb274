/* xlanb graph viewer, 2 of 4: where the boxes go. First the layered layout of one level of a
 * graph (globalThis.XlanbGraphLayout.layered); then the scene: which scopes are open, the
 * boxes and clusters that shows, each cluster laid out by `layered`, innermost first, and
 * placed (the Viewer methods autoExpand, toggle, expandAll, collapseAll, reveal, refresh,
 * itemLines, measure, layoutElement, place, expandable). */

/* xlanb graph viewer: layered layout of one level of a graph (written for xlanb; no
 * dependencies). Longest-path layering with sources pulled down to their first user,
 * dummy nodes on long edges when there are not too many, barycenter ordering, and x
 * coordinates by weighted isotonic regression (pool adjacent violators). Linear-ish time:
 * 20,000 nodes lay out in a fraction of a second, where Graphviz/elk/dagre take minutes. */
(function (root) {
  "use strict";
  if (root.XlanbGraphLayout && root.XlanbGraphLayout.version === 3) return;

  /**
   * Lay out n boxes (widths w, heights h) connected by edges src[i] -> dst[i] (local indices).
   * Edges are oriented from the lower key to the higher one (keys are topological ranks), so
   * the layering never meets a cycle; an edge drawn against its orientation is "reversed".
   * Returns {x, y: box centres; width, height: extent; group: edge -> route index;
   * reversed: per edge; routes: per route the inner points [x0, y0, x1, y1, ...]}.
   */
  function layered(n, w, h, key, src, dst, opts) {
    opts = opts || {};
    var layerGap = opts.layerGap || 34, nodeGap = opts.nodeGap || 18;
    var rank = topological(n, key, src, dst);
    var edges = oriented(n, rank, src, dst);
    var layer = layersOf(n, rank, edges.gu, edges.gv);
    var layers = 0;
    for (var i = 0; i < n; i++) if (layer[i] + 1 > layers) layers = layer[i] + 1;
    var g = withDummies(n, w, h, rank, layer, edges.gu, edges.gv, opts);
    var order = orderedRows(g, layers, opts);
    var rows = order.rows;
    function sep(p, q) {
      var gap = (p >= n && q >= n) ? 4 : (p >= n || q >= n) ? 8 : nodeGap;
      return (g.W[p] + g.W[q]) / 2 + gap;
    }
    var x = columns(n, g, rows, sep);
    // -- y: layer by layer
    var top = 0, minX = Infinity, maxX = -Infinity, N = g.N, W = g.W, H = g.H, j;
    var y = new Float64Array(N);
    for (i = 0; i < layers; i++) {
      var tall = 8, row = rows[i];
      for (j = 0; j < row.length; j++) if (H[row[j]] > tall) tall = H[row[j]];
      for (j = 0; j < row.length; j++) y[row[j]] = top + tall / 2;
      top += tall + (tall > 8 ? layerGap : layerGap / 2);
    }
    for (i = 0; i < N; i++) {
      if (x[i] - W[i] / 2 < minX) minX = x[i] - W[i] / 2;
      if (x[i] + W[i] / 2 > maxX) maxX = x[i] + W[i] / 2;
    }
    if (N === 0) { minX = 0; maxX = 0; }
    for (i = 0; i < N; i++) x[i] -= minX;
    var routes = new Array(g.chain.length);
    for (var r = 0; r < routes.length; r++) {
      var pts = [], chain = g.chain[r];
      if (chain) for (j = 0; j < chain.length; j++) pts.push(x[chain[j]], y[chain[j]]);
      routes[r] = pts;
    }
    return {
      x: x.subarray(0, n), y: y.subarray(0, n), width: maxX - minX,
      height: Math.max(0, top - layerGap), group: edges.groupOf, reversed: edges.reversed,
      routes: routes, layers: layers, dummies: g.dummies, crossings: order.crossings
    };
  }

  /** Edges pointed from the lower rank to the higher, parallel ones grouped: per edge its
   * group and whether it was reversed; per group its ends gu[g] -> gv[g]. */
  function oriented(n, rank, src, dst) {
    var m = src.length, groupOf = new Int32Array(m), reversed = new Uint8Array(m);
    var gu = [], gv = [], seen = new Map(), u, v;
    for (var i = 0; i < m; i++) {
      var a = src[i], b = dst[i];
      if (rank[a] < rank[b]) { u = a; v = b; }
      else { u = b; v = a; reversed[i] = 1; }
      var k = u * n + v, g = seen.get(k);
      if (g === undefined) { g = gu.length; seen.set(k, g); gu.push(u); gv.push(v); }
      groupOf[i] = g;
    }
    return { groupOf: groupOf, reversed: reversed, gu: gu, gv: gv };
  }

  /** Per box its layer: the longest path from the sources, then every box as low as its
   * users allow; boxes with no edge at all (a group of parameters, of called computations)
   * form a grid instead of one endless row. */
  function layersOf(n, rank, gu, gv) {
    var i, j, v, byKey = new Int32Array(n);
    for (i = 0; i < n; i++) byKey[rank[i]] = i;
    var outs = csr(n, gu, gv), ins = csr(n, gv, gu);
    var layer = new Int32Array(n);
    for (i = 0; i < n; i++) {
      v = byKey[i];
      for (j = ins.start[v]; j < ins.start[v + 1]; j++) {
        var l = layer[ins.adj[j]] + 1;
        if (l > layer[v]) layer[v] = l;
      }
    }
    for (i = n - 1; i >= 0; i--) {
      v = byKey[i];
      if (outs.start[v] === outs.start[v + 1]) continue;
      var lowest = 1e9;
      for (j = outs.start[v]; j < outs.start[v + 1]; j++) {
        if (layer[outs.adj[j]] < lowest) lowest = layer[outs.adj[j]];
      }
      if (lowest - 1 > layer[v]) layer[v] = lowest - 1;
    }
    var loose = [];
    for (i = 0; i < n; i++) {
      v = byKey[i];
      if (outs.start[v] === outs.start[v + 1] && ins.start[v] === ins.start[v + 1]) loose.push(v);
    }
    if (loose.length > 6) {
      var perRow = Math.max(4, Math.ceil(Math.sqrt(loose.length * 3)));
      for (i = 0; i < loose.length; i++) layer[loose[i]] = Math.floor(i / perRow);
    }
    return layer;
  }

  /** The boxes and, when their number stays reasonable, dummy boxes on long edges (box
   * n + k): per box its layer L, size W x H, sort key K; the edges between consecutive
   * layers (down, up); per edge group its chain of dummies (null: none). */
  function withDummies(n, w, h, rank, layer, gu, gv, opts) {
    var G = gu.length, g, i, u, v, spans = 0;
    for (g = 0; g < G; g++) spans += layer[gv[g]] - layer[gu[g]] - 1;
    var budget = opts.dummyBudget !== undefined ? opts.dummyBudget : Math.min(60000,
      Math.max(3000, 3 * n));
    var useDummies = spans > 0 && spans <= budget;
    var N = n + (useDummies ? spans : 0);
    var L = new Int32Array(N), W = new Float64Array(N), H = new Float64Array(N);
    var K = new Float64Array(N);
    for (i = 0; i < n; i++) { L[i] = layer[i]; W[i] = w[i]; H[i] = h[i]; K[i] = rank[i]; }
    var eu = [], ev = [], chain = new Array(G);
    var next = n;
    for (g = 0; g < G; g++) {
      u = gu[g]; v = gv[g];
      var span = layer[v] - layer[u];
      if (useDummies && span > 1) {
        var prev = u, list = [];
        for (var s = 1; s < span; s++) {
          var d = next++;
          L[d] = layer[u] + s; W[d] = 6; H[d] = 0; K[d] = rank[u] + s * 1e-6;
          eu.push(prev); ev.push(d); prev = d; list.push(d);
        }
        eu.push(prev); ev.push(v);
        chain[g] = list;
      } else {
        eu.push(u); ev.push(v);
        chain[g] = null;
      }
    }
    return { N: N, L: L, W: W, H: H, K: K, chain: chain, down: csr(N, eu, ev), up: csr(N, ev, eu),
      useDummies: useDummies, dummies: useDummies ? spans : 0 };
  }

  /** The boxes of each layer in order: by key, then barycenter sweeps, keeping the order
   * with the fewest crossings where counting them is affordable (crossings -1: not counted). */
  function orderedRows(g, layers, opts) {
    var N = g.N, L = g.L, K = g.K, up = g.up, down = g.down, i, j, v;
    var rows = [];
    for (i = 0; i < layers; i++) rows.push([]);
    var byK = new Int32Array(N);
    for (i = 0; i < N; i++) byK[i] = i;
    byK.sort(function (p, q) { return K[p] - K[q] || p - q; });
    for (i = 0; i < N; i++) rows[L[byK[i]]].push(byK[i]);
    var pos = new Float64Array(N), rel = new Float64Array(N);
    function index(row) {
      for (var t = 0; t < row.length; t++) { pos[row[t]] = t; rel[row[t]] = (t + 0.5) / row.length; }
    }
    for (i = 0; i < layers; i++) index(rows[i]);
    var sweeps = opts.sweeps !== undefined ? opts.sweeps : (N <= 2500 ? 12 : N <= 12000 ? 4 : 2);
    var bary = new Float64Array(N);
    var best = null, bestCrossings = Infinity, counting = g.useDummies && N <= 6000;
    if (counting) { bestCrossings = crossings(rows, down, pos); best = rows.map(function (r) { return r.slice(); }); }
    for (var sweep = 0; sweep < sweeps; sweep++) {
      var downward = sweep % 2 === 0;
      var adj = downward ? up : down;
      for (var t = 0; t < layers; t++) {
        var row = rows[downward ? t : layers - 1 - t];
        if (row.length < 2) continue;
        for (j = 0; j < row.length; j++) {
          v = row[j];
          var sum = 0, cnt = 0;
          for (var e = adj.start[v]; e < adj.start[v + 1]; e++) { sum += rel[adj.adj[e]]; cnt++; }
          bary[v] = cnt ? sum / cnt : rel[v];
        }
        row.sort(function (p, q) { return bary[p] - bary[q] || pos[p] - pos[q]; });
        index(row);
      }
      if (counting) {
        var c = crossings(rows, down, pos);
        if (c < bestCrossings) { bestCrossings = c; best = rows.map(function (r2) { return r2.slice(); }); }
      }
    }
    if (best) { rows = best; for (i = 0; i < layers; i++) index(rows[i]); }
    return { rows: rows, crossings: counting ? bestCrossings : -1 };
  }

  /** x of each box: packed, then pulled toward its neighbours without overlaps (weighted
   * PAV, `place`), alternately from above and below, both on the last pass. */
  function columns(n, g, rows, sep) {
    var N = g.N, up = g.up, down = g.down, layers = rows.length, i, j, t, e, v;
    var x = new Float64Array(N);
    for (i = 0; i < layers; i++) {
      var row = rows[i], acc = 0;
      for (j = 0; j < row.length; j++) {
        if (j > 0) acc += sep(row[j - 1], row[j]);
        x[row[j]] = acc;
      }
      for (j = 0; j < row.length; j++) x[row[j]] -= acc / 2;
    }
    var passes = N <= 12000 ? 6 : 3;
    var desired = new Float64Array(N), weight = new Float64Array(N);
    for (var pass = 0; pass < passes; pass++) {
      var both = pass === passes - 1;
      var fromAbove = pass % 2 === 0;
      for (t = 0; t < layers; t++) {
        var row2 = rows[fromAbove ? t : layers - 1 - t];
        for (j = 0; j < row2.length; j++) {
          v = row2[j];
          var total = 0, count = 0;
          if (both || fromAbove) {
            for (e = up.start[v]; e < up.start[v + 1]; e++) { total += x[up.adj[e]]; count++; }
          }
          if (both || !fromAbove) {
            for (e = down.start[v]; e < down.start[v + 1]; e++) { total += x[down.adj[e]]; count++; }
          }
          if (count) { desired[v] = total / count; weight[v] = v >= n ? count * 2 : count; }
          else { desired[v] = x[v]; weight[v] = 0.05; }
        }
        place(row2, desired, weight, sep, x);
      }
    }
    return x;
  }

  /** A topological rank (Kahn's algorithm, the lowest key first among the ready nodes); on a
   * cycle the lowest-keyed waiting node goes next, so only edges closing cycles point back. */
  function topological(n, key, src, dst) {
    var i, byKey = new Int32Array(n), rank = new Int32Array(n).fill(-1);
    for (i = 0; i < n; i++) byKey[i] = i;
    byKey.sort(function (p, q) { return key[p] - key[q] || p - q; });
    var consistent = true;  // the usual case: keys already order every edge
    for (i = 0; i < src.length && consistent; i++) {
      if (!(key[src[i]] < key[dst[i]] || (key[src[i]] === key[dst[i]] && src[i] < dst[i]))) consistent = false;
    }
    if (consistent) { for (i = 0; i < n; i++) rank[byKey[i]] = i; return rank; }
    var outs = csr(n, src, dst), indeg = new Int32Array(n);
    for (i = 0; i < src.length; i++) if (src[i] !== dst[i]) indeg[dst[i]]++;
    var heap = [], cursor = 0, next = 0;
    function less(p, q) { return key[p] < key[q] || (key[p] === key[q] && p < q); }
    function push(v) {
      heap.push(v);
      for (var c = heap.length - 1; c > 0;) {
        var p = (c - 1) >> 1;
        if (!less(heap[c], heap[p])) break;
        var t = heap[c]; heap[c] = heap[p]; heap[p] = t; c = p;
      }
    }
    function pop() {
      var top = heap[0], last = heap.pop();
      if (heap.length) {
        heap[0] = last;
        for (var c = 0; ;) {
          var l = 2 * c + 1, r = l + 1, s = c;
          if (l < heap.length && less(heap[l], heap[s])) s = l;
          if (r < heap.length && less(heap[r], heap[s])) s = r;
          if (s === c) break;
          var t = heap[c]; heap[c] = heap[s]; heap[s] = t; c = s;
        }
      }
      return top;
    }
    for (i = 0; i < n; i++) if (!indeg[i]) push(i);
    while (next < n) {
      if (!heap.length) {
        while (rank[byKey[cursor]] >= 0) cursor++;
        indeg[byKey[cursor]] = 0;
        push(byKey[cursor]);
      }
      var v = pop();
      if (rank[v] >= 0) continue;
      rank[v] = next++;
      for (var e = outs.start[v]; e < outs.start[v + 1]; e++) {
        var w = outs.adj[e];
        if (rank[w] < 0 && --indeg[w] === 0) push(w);
      }
    }
    return rank;
  }

  /** Compressed adjacency: for each node, the targets of its edges. */
  function csr(n, from, to) {
    var start = new Int32Array(n + 1), i;
    for (i = 0; i < from.length; i++) start[from[i] + 1]++;
    for (i = 0; i < n; i++) start[i + 1] += start[i];
    var fill = start.slice(0, n), adj = new Int32Array(from.length);
    for (i = 0; i < from.length; i++) adj[fill[from[i]]++] = to[i];
    return { start: start, adj: adj };
  }

  /** Edge crossings between adjacent layers (a Fenwick tree over the lower positions). */
  function crossings(rows, down, pos) {
    var total = 0;
    for (var r = 0; r + 1 < rows.length; r++) {
      var row = rows[r], lower = rows[r + 1].length, pairs = [];
      for (var j = 0; j < row.length; j++) {
        var v = row[j];
        for (var e = down.start[v]; e < down.start[v + 1]; e++) pairs.push(pos[v] * 1e7 + pos[down.adj[e]]);
      }
      pairs.sort(function (a, b) { return a - b; });
      var tree = new Int32Array(lower + 1), seen = 0;
      for (var p = 0; p < pairs.length; p++) {
        var q = pairs[p] % 1e7, k = q + 1, below = 0;
        for (var s = k; s > 0; s -= s & -s) below += tree[s];
        total += seen - below;
        for (s = k; s <= lower; s += s & -s) tree[s]++;
        seen++;
      }
    }
    return total;
  }

  /** Closest positions to `desired` (weighted least squares) keeping row order and gaps. */
  function place(row, desired, weight, sep, x) {
    var k = row.length;
    if (!k) return;
    var offset = new Float64Array(k);
    for (var i = 1; i < k; i++) offset[i] = offset[i - 1] + sep(row[i - 1], row[i]);
    var sums = [], weights = [], sizes = [];
    for (i = 0; i < k; i++) {
      var wt = weight[row[i]];
      var val = (desired[row[i]] - offset[i]) * wt, size = 1;
      while (sums.length && sums[sums.length - 1] / weights[weights.length - 1] > val / wt) {
        val += sums.pop(); wt += weights.pop(); size += sizes.pop();
      }
      sums.push(val); weights.push(wt); sizes.push(size);
    }
    var at = 0;
    for (var b = 0; b < sums.length; b++) {
      var mean = sums[b] / weights[b];
      for (var c = 0; c < sizes[b]; c++, at++) x[row[at]] = mean + offset[at];
    }
  }

  root.XlanbGraphLayout = { version: 3, layered: layered };
})(typeof globalThis !== "undefined" ? globalThis : this);

(function (root) {
  "use strict";
  var ns = root.XlanbGraph;
  if (ns.complete) return;
  var layered = root.XlanbGraphLayout.layered;
  var EDGE = ns.EDGE;
  /** Box sizes (px at zoom 1): a character, a node's and a collapsed scope's height, a
   * cluster's padding and title bar, the longest label measured. */
  var GEOMETRY = { CHAR: 6.7, NODE_H: 34, SCOPE_H: 38, PAD: 12, HEADER: 22, MAX_CHARS: 34 };
  var CHAR = GEOMETRY.CHAR, NODE_H = GEOMETRY.NODE_H, SCOPE_H = GEOMETRY.SCOPE_H;
  var PAD = GEOMETRY.PAD, HEADER = GEOMETRY.HEADER, MAX_CHARS = GEOMETRY.MAX_CHARS;
  var V = ns.Viewer.prototype;

  // -- expansion --------------------------------------------------------------------------
  /** Open scopes, biggest first, while the top level is too coarse to say anything (fewer
   * than a dozen boxes) and the view stays readable (at most 60 boxes). Fusions and other
   * called computations stay closed unless the whole graph is small. */
  V.autoExpand = function () {
    var m = this.m, budget = this.options.budget || 60, enough = 12;
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
  /** The edges between visible items, deduplicated, each assigned to the cluster holding
   * both ends (edgeAt: cluster element -> indices in edges; -1: the top level). */
  function visibleEdges(m, expanded, top, rep, kind, ref, parentEl, depth) {
    var seen = new Map(), vis = [], edgeAt = new Map(), I = kind.length, i;
    for (i = 0; i < m.E; i++) {
      var u = rep[m.eSrc[i]], v = rep[m.eDst[i]];
      if (u === v) continue;
      var ek = m.eKind[i];
      if (ek === EDGE.data) {
        var bound = m.anchorOf[m.eDst[i]];
        if (bound >= 0 && expanded[bound] && top[bound] < 0 && m.sHasBind[bound] &&
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
    return { edges: vis, edgeAt: edgeAt };
  }

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
    var visible = visibleEdges(m, this.expanded, top, rep, kind, ref, parentEl, depth);
    var vis = visible.edges, edgeAt = visible.edgeAt;
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
    this.showCounts(shown, I);
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

  /** The collapsed scope an item stands for, or -1. */
  V.expandable = function (item) {
    var st = this.st, m = this.m;
    if (st.kind[item] === 1) return st.ref[item];
    var s = m.anchorOf[st.ref[item]];
    return s >= 0 && !this.expanded[s] ? s : -1;
  };

  ns.GEOMETRY = GEOMETRY;
})(typeof globalThis !== "undefined" ? globalThis : this);
