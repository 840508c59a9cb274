/* Loads the graph viewer's scripts (xlanb/views/graph_viewer/static) into a fresh global, as
 * the page does, without a page: the tests call their pure parts (layout, model, patches). */
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const STATIC = path.join(__dirname, "..", "..", "xlanb", "views", "graph_viewer", "static");
const SCRIPTS = ["model.js", "layout.js", "render.js", "ui.js"];

/** A new context holding globalThis.XlanbGraph and globalThis.XlanbGraphLayout. */
function loadViewer() {
  const context = vm.createContext({ atob, TextDecoder });  // a page has both
  for (const name of SCRIPTS) {
    const file = path.join(STATIC, name);
    vm.runInContext(fs.readFileSync(file, "utf8"), context, { filename: file });
  }
  return context;
}

/** The payloads pytest wrote for these tests (tests/fast/test_viewer_js.py), or null. */
function fixtures() {
  const dir = process.env.XLANB_JS_FIXTURES;
  if (!dir) return null;
  return JSON.parse(fs.readFileSync(path.join(dir, "payloads.json"), "utf8"));
}

module.exports = { loadViewer, fixtures };
