// ESLint for the graph viewer's JavaScript (make lint): the recommended rules; the viewer's
// scripts are classic browser scripts sharing globalThis, its tests CommonJS modules in node;
// no function over 80 lines.
"use strict";
const js = require("@eslint/js");
const globals = require("globals");

const rules = {
  ...js.configs.recommended.rules,
  "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
};

module.exports = [
  {
    files: ["xlanb/views/graph_viewer/static/**/*.js"],
    rules,
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.browser } },
  },
  {
    files: ["tests/js/**/*.js", "tools/js/*.js"],
    rules,
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...globals.node } },
  },
];
