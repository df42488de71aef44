/**
 * A do-nothing `vscode` module for code that only needs to *load* under plain
 * Node (vscode-languageclient reads vscode's top-level names at import time).
 * Any property is itself callable and constructible.
 */
import Module = require('module');

export const vscodeStub: any = new Proxy(function () {}, {
    get: (_target, name) => (name === '__esModule' ? false : vscodeStub),
    apply: () => vscodeStub,
    construct: () => vscodeStub,
});

/** Makes `require('vscode')` return the stub; returns a function that undoes it. */
export function installVscodeStub(): () => void {
    const modules = Module as any;
    const resolve = modules._resolveFilename;
    modules._resolveFilename = function (request: string, ...rest: unknown[]) {
        return request === 'vscode' ? 'vscode' : resolve.call(this, request, ...rest);
    };
    const stubModule = new Module('vscode');
    stubModule.loaded = true;
    stubModule.exports = vscodeStub;
    require.cache['vscode'] = stubModule;
    return () => {
        modules._resolveFilename = resolve;
        delete require.cache['vscode'];
    };
}
