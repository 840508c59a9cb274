/* xlanb graph viewer, 4 of 4: what a person handles. The Viewer's start (its DOM: toolbar,
 * search box, colour menu, "Hottest" button, legend, details panel; the light or dark theme
 * of the page around it), pointer and keys, selection, search, and mounting every
 * .xlanb-graph element of the page on its JSON payload. Names go into the page with
 * textContent only. */
(function (root) {
  "use strict";
  var ns = root.XlanbGraph;
  if (ns.complete) return;
  var Model = ns.Model, fmt = ns.fmt, fmtSeconds = ns.fmtSeconds, fmtShare = ns.fmtShare,
    fmtSource = ns.fmtSource;
  var HEADER = ns.GEOMETRY.HEADER, DIFF_STATES = ns.DIFF_STATES, palette = ns.palette;
  var V = ns.Viewer.prototype;

  /** Build the viewer in `el` on the decoded payload `data`; ready (data-ready="true") after
   * its first frame. */
  V.start = function (el, data, options) {
    this.el = el;
    this.options = options || {};
    this.m = new Model(data);
    this.expanded = new Uint8Array(this.m.S);
    this.layoutCache = new Map();  // scope -> layout, reused while its signature holds
    this.k = 1; this.tx = 0; this.ty = 0;
    this.selected = -1; this.selectedScope = -1;
    this.matches = []; this.matchIndex = -1; this.query = "";
    this.colorBy = data.options && data.options.colorBy || "";
    this.hotIndex = -1;
    this.listeners = {};
    this.setTheme(pageIsDark(el));
    this.build();
    this.watchTheme();
    this.autoExpand();
    this.refresh(true);
    var self = this;
    this.resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(function () {
      self.resize(); }) : null;
    if (this.resizeObserver) this.resizeObserver.observe(this.stage);
    this.resize();
    this.fit();
    requestAnimationFrame(function () {
      self.draw();
      el.setAttribute("data-ready", "true");
      self.emit("ready", {});
    });
  };

  /** Stop watching the page (its size, its theme): the element is going away. */
  V.destroy = function () {
    if (this.resizeObserver) this.resizeObserver.disconnect();
    if (this.themeObserver) this.themeObserver.disconnect();
    if (this.colorScheme) this.colorScheme.removeEventListener("change", this.onScheme);
  };

  // -- theme ----------------------------------------------------------------------------------
  /** Whether the viewer sits on a dark page: JupyterLab's and VS Code's theme markers, else the
   * first opaque background behind it. */
  function pageIsDark(el) {
    var body = document.body;
    if (body) {
      var lab = body.getAttribute("data-jp-theme-light");
      if (lab === "false" || lab === "true") return lab === "false";
      if (body.classList.contains("vscode-dark") || body.classList.contains("vscode-high-contrast")) return true;
      if (body.classList.contains("vscode-light")) return false;
    }
    for (var node = el.parentElement; node; node = node.parentElement) {
      var parts = (getComputedStyle(node).backgroundColor.match(/[\d.]+/g) || []).map(Number);
      if (parts.length >= 3 && (parts.length < 4 || parts[3] > 0.5)) {
        return 0.299 * parts[0] + 0.587 * parts[1] + 0.114 * parts[2] < 110;
      }
    }
    return false;
  }
  /** Follow the page when its theme changes (JupyterLab's theme menu, the system's scheme). */
  V.watchTheme = function () {
    var self = this;
    this.onScheme = function () {
      var dark = pageIsDark(self.el);
      if (dark !== self.dark) self.setTheme(dark);
    };
    if (typeof MutationObserver !== "undefined" && document.body) {
      this.themeObserver = new MutationObserver(this.onScheme);
      this.themeObserver.observe(document.body, { attributes: true,
        attributeFilter: ["class", "data-jp-theme-light"] });
    }
    if (root.matchMedia) {
      this.colorScheme = root.matchMedia("(prefers-color-scheme: dark)");
      if (this.colorScheme.addEventListener) this.colorScheme.addEventListener("change", this.onScheme);
    }
  };

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
    [["", "colour: op kind"]]
      .concat(m.measured ? [["time", "colour: " + m.measured.label]] : [])
      .concat([["flops", "colour: FLOPs"], ["bytes", "colour: bytes"]])
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
      button("Fit", "fit the graph in view, labels legible (F); Shift+F: the whole graph",
        function () { this.fit(); }, "fit"),
      button("\u2212", "zoom out", function () { this.zoomBy(1 / 1.3); }, "zoom-out"),
      button("+", "zoom in", function () { this.zoomBy(1.3); }, "zoom-in"),
      button("Expand all", "expand every scope", this.expandAll, "expand-all"),
      button("Collapse all", "collapse every scope", this.collapseAll, "collapse-all"),
      this.searchBox,
      button("\u25c0", "previous match (Shift+Enter)", this.prevMatch, "prev"),
      button("\u25b6", "next match (Enter)", this.nextMatch, "next"),
      this.matchLabel, this.colorSelect,
      m.measured ? button("Hottest", "select the node with the most " + m.measured.label +
        "; again: the next one", this.nextHottest, "hottest") : null,
      this.status]);
    this.canvas = h("canvas", { cls: "xg-canvas", tabindex: "0", "aria-label": "graph" });
    this.legend = h("div", { cls: "xg-legend", "data-role": "legend" });
    this.panel = h("div", { cls: "xg-panel", "data-role": "details", hidden: "" });
    this.summary = data.summary ? h("div", { cls: "xg-summary", "data-role": "summary", text: data.summary }) : null;
    this.stage = h("div", { cls: "xg-stage" }, [this.canvas, this.panel]);
    el.appendChild(this.toolbar);
    if (this.summary) el.appendChild(this.summary);
    el.appendChild(this.stage);
    el.appendChild(this.legend);  // under the canvas, never over a node
    this.ctx = this.canvas.getContext("2d");
    this.bindPointer();
    this.renderLegend();
  };

  /** The status line and the counts the tests and benchmarks read, after each refresh. */
  V.showCounts = function (shown, items) {
    var n = this.m.n;
    this.status.textContent = shown.toLocaleString() + " of " + n.toLocaleString() + " nodes shown" +
      (items - shown ? ", " + (items - shown) + " collapsed scopes" : "");
    this.el.setAttribute("data-visible-items", String(items));
    this.el.setAttribute("data-visible-nodes", String(shown));
  };

  // -- colour menu and legend ---------------------------------------------------------------
  V.setColorBy = function (what) {
    this.colorBy = what; this.colorSelect.value = what;
    this.renderLegend(); this.requestDraw();
  };
  V.renderLegend = function () {
    var legend = this.legend, m = this.m;
    legend.textContent = "";
    var swatch = function (fill, stroke, label, dashed) {
      return h("span", { cls: "xg-key-item" }, [h("i", { style: "background:" + fill + ";border-color:" + stroke +
        (dashed ? ";border-style:dashed" : "") }), document.createTextNode(label)]);
    };
    var range = this.colorBy ? this.costRange() : null;
    if (range) {
      var time = this.colorBy === "time", number = time ? fmtSeconds : fmt;
      var what = time ? m.measured.label : this.colorBy === "custom" ? (m.cost.customLabel || "cost") : this.colorBy;
      legend.appendChild(h("span", { cls: "xg-key-item" }, [document.createTextNode(number(range.lo) + " "),
        h("b", { cls: "xg-ramp", style: "background:" + this.rampGradient() }),
        document.createTextNode(" " + number(range.hi) + " " + what + " (log)")]));
      if (time) {
        var ms = m.measured, missed = ms.unmatched || { ops: 0 };
        legend.appendChild(h("span", { cls: "xg-key-item", "data-role": "measured-note",
          text: ms.node.length + " ops measured, " + fmtSeconds(ms.total) + (missed.ops ? "; " +
            missed.ops + " more not in this graph (" + fmtSeconds(missed.seconds) + ")" : "") }));
      }
    } else {
      var styles = this.categoryStyles(), used = new Uint8Array(styles.length);
      for (var i = 0; i < m.n; i++) used[m.cat[i]] = 1;
      styles.forEach(function (style, c) {  // plain ops need no key
        if (used[c] && style.name !== "op") legend.appendChild(swatch(style.fill, style.stroke, style.label));
      });
    }
    var fallbacks = 0;
    for (i = 0; i < m.n; i++) if (m.isFallback(i)) fallbacks++;
    if (fallbacks) legend.appendChild(swatch(palette.fallback.fill, palette.fallback.stroke, "CPU fallback / host callback (" + fallbacks + ")"));
    if (m.diff) {
      var self = this;
      DIFF_STATES.forEach(function (name, state) {
        var style = self.diffStyle(state);
        if (style) legend.appendChild(swatch(style.fill, style.stroke, name, style.dashed));
      });
    }
    legend.hidden = !legend.childNodes.length;
  };

  // -- pointer ---------------------------------------------------------------------------------
  V.bindPointer = function () {
    var self = this, canvas = this.canvas, drag = null;
    canvas.addEventListener("pointerdown", function (ev) {
      canvas.focus({ preventScroll: true });
      drag = { x: ev.clientX, y: ev.clientY, tx: self.tx, ty: self.ty, moved: false };
      if (canvas.setPointerCapture) try { canvas.setPointerCapture(ev.pointerId); } catch { /* synthetic */ }
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
      if (ev.key === "f" || ev.key === "F") self.fit(ev.shiftKey);
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
        var measured = m.timeOf(v);
        tip = m.name[v] + " = " + m.op[v] + (m.shape[v] ? " " + m.shape[v] : "") +
          (m.file[v] ? "\n" + fmtSource(m.file[v], m.line[v]) : "") +
          (measured ? "\n" + m.measured.label + " " + fmtSeconds(measured.seconds) +
            (measured.share !== null ? " (" + fmtShare(measured.share) + ")" : "") : "");
      } else {
        tip = m.sLabel[st.ref[i]] + " (" + m.sSize[st.ref[i]] + " ops)";
        var inside = this.scopeTime(st.ref[i]);
        if (inside > 0) tip += "\n" + m.measured.label + " " + fmtSeconds(inside);
      }
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
    var m = this.m, attrs = {}, a = m.attrsOf(v);
    for (var i = 0; i + 1 < a.length; i += 2) attrs[m.string(a[i])] = m.string(a[i + 1]);
    return {
      index: v, id: m.data.nodes.id ? m.string(m.data.nodes.id[v]) : m.name[v], name: m.name[v],
      op: m.op[v], shape: m.shape[v], scope: m.scopePath(m.scope[v]).join(" / "),
      op_name: m.opName[v], source_file: m.file[v], source_line: m.line[v] || null,
      source_function: m.func[v], attrs: attrs, text: m.textOf(v),
      fallback: m.isFallback(v), diff: m.diff ? DIFF_STATES[m.diff[v]] : null,
      measured: m.timeOf(v)
    };
  };
  /** Measured device time of the nodes inside scope s (0: none). */
  V.scopeTime = function (s) {
    return this.m.measured ? this.scopeCost(this.m.measured.time)[s] : 0;
  };
  /** Select the hottest node, then on each call the next hottest (by measured device time). */
  V.nextHottest = function () {
    var ms = this.m.measured;
    if (!ms || !ms.node.length) return -1;
    this.hotIndex = (this.hotIndex + 1) % ms.node.length;
    this.select(ms.node[this.hotIndex], { reveal: true });
    return ms.node[this.hotIndex];
  };

  V.renderPanel = function () {
    var panel = this.panel, m = this.m, self = this;
    panel.textContent = "";
    var close = h("span", { cls: "xg-close" }, [
      h("button", { type: "button", title: this.panelFolded ? "show the details" : "fold the details",
        "data-action": "fold-details", text: this.panelFolded ? "\u25be" : "\u25b4",
        onclick: function () { self.panelFolded = !self.panelFolded; self.renderPanel(); } }),
      h("button", { type: "button", title: "close", text: "\u00d7",
        onclick: function () { self.select(-1); } })]);
    if (this.selected < 0 && this.selectedScope < 0) { panel.hidden = true; return; }
    panel.hidden = false;
    panel.classList.toggle("xg-folded", !!this.panelFolded);
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
      var inside = this.scopeTime(s);
      if (inside > 0) panel.appendChild(row(m.measured.label, fmtSeconds(inside) + " inside", "device-time"));
      panel.appendChild(h("button", { type: "button", "data-action": "toggle-scope",
        text: this.expanded[s] ? "Collapse" : "Expand",
        onclick: function () { self.toggle(s); self.renderPanel(); } }));
      return;
    }
    var v = this.selected, info = this.nodeInfo(v);
    panel.appendChild(h("div", { cls: "xg-head" }, [close, h("b", { text: m.label[v], "data-field": "label" })]));
    if (info.fallback) panel.appendChild(h("div", { cls: "xg-warn", text: "CPU fallback / host callback: runs on the host, outside the compiled graph" }));
    if (info.diff && info.diff !== "same") panel.appendChild(h("div", { cls: "xg-diff xg-diff-" + info.diff, text: info.diff }));
    var t = info.measured, file = info.source_file || (t && t.file) || "";
    var line = info.source_file ? info.source_line : t && t.line;
    [row("name", info.name), row("op", info.op), row("shape", info.shape),
      row("scope", info.scope), row("op_name", info.op_name),
      row("source", file ? fmtSource(file, line) +
        (info.source_function ? " (" + info.source_function + ")" : "") : "", "source"),
      t ? row(m.measured.label, fmtSeconds(t.seconds) + (t.share !== null ? " (" + fmtShare(t.share) +
        " of device time)" : ""), "device-time") : null,
      t && t.count ? row("runs", t.count + " \u00d7 " + fmtSeconds(t.seconds / t.count), "runs") : null,
      t && t.cellLine ? row("cell line", t.cellLine + (t.code ? ": " + t.code : ""), "cell-line") : null,
      t ? row("rank", "#" + t.rank + " of " + t.of + " measured", "hot-rank") : null,
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

  // -- search ---------------------------------------------------------------------------------
  V.search = function (query) {
    this.query = query;
    var q = query.trim(), found = this.m.find(query);
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

  // ---- mounting --------------------------------------------------------------------------
  var PACKED = "application/x-xlanb-gzip-base64";

  /** The text of a packed script (gzip, base64): a promise. */
  function unpack(base64) { return new Response(unpacked(base64)).text(); }
  /** The bytes of a packed script (gzip, base64) as a stream. */
  function unpacked(base64) {
    var bytes;
    if (typeof Uint8Array.fromBase64 === "function") {
      bytes = Uint8Array.fromBase64(base64.trim());  // native where the browser has it
    } else {
      var binary = atob(base64.trim());
      bytes = new Uint8Array(binary.length);
      for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    }
    return new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  }

  /** The payload of a packed script: a promise, kept on the script (other payloads may be
   * patches of it: data-base names the script of their base; views/graph_viewer/patch.py). */
  function payloadOf(script) {
    if (script.xlanbPayload) return script.xlanbPayload;
    var baseId = script.getAttribute("data-base");
    var base = baseId && document.getElementById(baseId);
    if (baseId && !base) {
      return Promise.reject(new Error("its base payload " + baseId + " is not on the page"));
    }
    if (script.getAttribute("data-format") === "binary") {  // payload.py's binary_payload
      script.xlanbPayload = new Response(unpacked(script.textContent)).arrayBuffer()
        .then(ns.decodeBuffer);
      return script.xlanbPayload;
    }
    script.xlanbPayload = Promise.all([unpack(script.textContent), base ? payloadOf(base) : null])
      .then(function (both) {
        var data = JSON.parse(both[0]);
        return both[1] ? applyPatch(both[1], data) : data;
      });
    return script.xlanbPayload;
  }

  /** `base` changed by `patch` (a new value: `base`, which others may share, stays as it is). */
  function applyPatch(base, patch) {
    if ("v" in patch) return patch.v;
    var out, key, i;
    if ("k" in patch) {
      out = Object.assign({}, base);
      for (key in patch.k) out[key] = applyPatch(base[key], patch.k[key]);
      for (i = 0; patch.drop && i < patch.drop.length; i++) delete out[patch.drop[i]];
      return out;
    }
    out = base.slice(0, patch.a);
    out.length = patch.a;
    for (i = 0; i < patch.s.length; i += 2) out[patch.s[i]] = patch.s[i + 1];
    return out;
  }

  /** Start the viewer in `el` (a .xlanb-graph element holding its payload: JSON, or packed,
   * then the viewer starts once it is unpacked and the result is a promise). */
  function mount(el) {
    if (el.xlanbViewer || el.getAttribute("data-mounted")) return el.xlanbViewer;
    el.setAttribute("data-mounted", "true");
    var packed = el.querySelector("script[type='" + PACKED + "']");
    if (packed) {
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser cannot unpack the graph (no DecompressionStream); " +
          "prof.graph(i).to_html('graph.html') writes it unpacked");
      }
      return payloadOf(packed).then(function (data) { return start(el, data); });
    }
    var script = el.querySelector("script[type='application/json']");
    return start(el, JSON.parse(script.textContent));
  }

  function start(el, data) {
    var note = el.querySelector(".xg-static");
    if (note) note.parentNode.removeChild(note);
    var viewer = new ns.Viewer(el, data);
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
  /** Tabs of a program's views (its optimized HLO, its StableHLO): one shown at a time; a
   * view's viewer starts the first time it is shown. */
  function wireViews(doc) {
    var groups = (doc || document).querySelectorAll(".xlanb-graph-views:not([data-wired])");
    for (var g = 0; g < groups.length; g++) {
      var group = groups[g];
      group.setAttribute("data-wired", "true");
      group.addEventListener("click", function (event) {
        var tab = event.target.closest && event.target.closest(".xg-view-tab");
        if (!tab || !this.contains(tab)) return;
        var chosen = tab.getAttribute("data-view");
        var tabs = this.querySelectorAll(".xg-view-tab");
        for (var t = 0; t < tabs.length; t++) {
          tabs[t].setAttribute("aria-selected", String(tabs[t] === tab));
        }
        var panes = this.querySelectorAll(".xg-view");
        for (var p = 0; p < panes.length; p++) {
          var shown = panes[p].getAttribute("data-view") === chosen;
          if (shown) panes[p].removeAttribute("hidden"); else panes[p].setAttribute("hidden", "");
          var lazy = shown && panes[p].querySelector(".xlanb-graph[data-lazy]");
          if (lazy) {
            lazy.removeAttribute("data-lazy");
            try {
              var started = mount(lazy);
              if (started && typeof started.then === "function") {
                started.catch(failed.bind(null, lazy));
              }
            } catch (error) { failed(lazy, error); }
          }
        }
      });
    }
  }
  function mountAll(doc) {
    wireViews(doc);
    var found = (doc || document).querySelectorAll(
      ".xlanb-graph:not([data-mounted]):not([data-lazy])");
    for (var i = 0; i < found.length; i++) {
      var el = found[i];
      try {
        var started = mount(el);
        if (started && typeof started.then === "function") {
          started.catch(failed.bind(null, el));
        }
      } catch (error) { failed(el, error); }
    }
  }
  function failed(el, error) {
    el.setAttribute("data-error", String(error));
    var note = document.createElement("pre");
    note.className = "xg-error";
    note.textContent = "xlanb graph viewer failed: " + error;
    el.appendChild(note);
  }
  ns.mount = mount;
  ns.mountAll = mountAll;
  ns.applyPatch = applyPatch;  // pure: tests/js
  ns.unpack = unpack;  // a report's plotly.js is packed the same way (views/report.py)
  ns.complete = true;
})(typeof globalThis !== "undefined" ? globalThis : this);
