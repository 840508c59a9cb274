// ESLint for the graph viewer's JavaScript (make lint): the recommended rules; the viewer's
// scripts are classic browser scripts sharing globalThis, its tests CommonJS modules in node.
"use strict";
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  {
    files: ["xlanb/views/graph_viewer/static/**/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.browser } },
  },
  {
    files: ["tests/js/**/*.js", "tools/js/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...globals.node } },
  },
];
