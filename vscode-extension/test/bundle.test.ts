/**
 * The packaged bundle (dist/extension.js, built by `npm run build`) loads with
 * nothing but `vscode` outside it — `vsce package --no-dependencies` ships no
 * node_modules, so a dependency esbuild failed to inline would only show up
 * when a user installs the .vsix.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module = require('module');
import * as path from 'node:path';
import { it } from 'node:test';
import { extensionRoot } from './manifest';
import { installVscodeStub } from './vscodeStub';

const bundle = path.join(extensionRoot, 'dist', 'extension.js');

it('the bundle loads with only vscode external and exports activate/deactivate', (t) => {
    if (!fs.existsSync(bundle)) {
        t.skip('dist/extension.js not built: run `npm run build` first');
        return;
    }
    const uninstall = installVscodeStub();
    const required: string[] = [];
    const load = (Module as any)._load;
    (Module as any)._load = function (request: string, ...rest: unknown[]) {
        required.push(request);
        return load.call(this, request, ...rest);
    };
    try {
        const extension = require(bundle);
        assert.equal(typeof extension.activate, 'function');
        assert.equal(typeof extension.deactivate, 'function');
    } finally {
        uninstall();
        (Module as any)._load = load;
    }
    const external = required.filter((name) => !name.startsWith('node:') && !Module.builtinModules.includes(name));
    assert.deepEqual([...new Set(external)].filter((name) => name !== bundle), ['vscode']);
});
