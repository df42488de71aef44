/**
 * activate() with the fake vscodeapi: what a user sees when the interpreter
 * lacks fullgraph, the client-side commands, and restarts on setting changes.
 * (Starting a real LanguageClient needs VS Code; the contract test covers the
 * server side of that.)
 */
// First: replaces src/vscodeapi before the modules under test load it.
import { reset, setSetting, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { installVscodeStub } from './vscodeStub';

// vscode-languageclient (imported by src/server.ts) needs some `vscode` to load.
const uninstallStub = installVscodeStub();
// eslint-disable-next-line @typescript-eslint/no-require-imports
const extension: typeof import('../src/extension') = require('../src/extension');

const MISSING = '/nonexistent/fullgraph-test/bin/python';
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Waits (up to 5 s) until `condition` holds: a restart runs a real, failing process check. */
async function until(condition: () => boolean, what: string): Promise<void> {
    for (let waited = 0; !condition(); waited += 20) {
        assert.ok(waited < 5000, `timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
    }
}

function fakeContext(): vscode.ExtensionContext {
    return { subscriptions: [] as vscode.Disposable[] } as unknown as vscode.ExtensionContext;
}

describe('activation', () => {
    beforeEach(() => {
        reset();
        setSetting('fullgraph.interpreter', [MISSING]);
    });
    after(async () => {
        await extension.deactivate();
        uninstallStub();
    });

    it('registers restart and fix-all, and fix-all runs the server fix-all code action', async () => {
        await extension.activate(fakeContext());
        assert.ok(state.commands.has('fullgraph.restart'));
        assert.ok(state.commands.has('fullgraph.fixAll'));
        await state.commands.get('fullgraph.fixAll')!();
        assert.deepEqual(state.executed, [
            { command: 'editor.action.codeAction', args: [{ kind: 'source.fixAll.fullgraph', apply: 'first' }] },
        ]);
    });

    it('says the interpreter is missing and offers to install, without installing', async () => {
        await extension.activate(fakeContext());
        await settle();
        const [warning] = state.messages;
        assert.equal(warning.level, 'warning');
        assert.match(warning.text, /interpreter not found: \/nonexistent\/fullgraph-test\/bin\/python/);
        assert.deepEqual(warning.items, ['Install fullgraph', 'Choose Interpreter']);
        assert.deepEqual(state.terminals, []);
        assert.equal(state.statusItems[0].text, '$(warning) fullgraph: not installed');
        assert.equal(state.statusItems[0].command, 'fullgraph.restart', 'clicking the item should retry');
    });

    it('installs in a visible terminal when the user clicks Install', async () => {
        state.messageChoice = 'Install fullgraph';
        await extension.activate(fakeContext());
        await until(() => state.terminals.length > 0, 'the install terminal');
        assert.deepEqual(state.terminals, [
            { name: 'fullgraph: install', shown: true, sent: [`${MISSING} -m pip install fullgraph`] },
        ]);
    });

    it('opens the interpreter setting when the user clicks Choose Interpreter', async () => {
        state.messageChoice = 'Choose Interpreter';
        await extension.activate(fakeContext());
        await until(() => state.executed.length > 0, 'the settings editor');
        assert.deepEqual(state.executed, [{ command: 'workbench.action.openSettings', args: ['fullgraph.interpreter'] }]);
    });

    it('restarts when a fullgraph setting changes, not for other settings', async () => {
        await extension.activate(fakeContext());
        await settle();
        assert.equal(state.messages.length, 1);
        for (const listener of state.configurationListeners) {
            listener({ affectsConfiguration: (section: string) => section === 'python' });
        }
        await settle();
        assert.equal(state.messages.length, 1);
        for (const listener of state.configurationListeners) {
            listener({ affectsConfiguration: (section: string) => section === 'fullgraph' });
        }
        await until(() => state.messages.length === 2, 'a restart after a fullgraph setting changed');
    });

    it('"Show Logs" shows the fullgraph output', async () => {
        await extension.activate(fakeContext());
        assert.equal(state.outputShown, 0);
        await state.commands.get('fullgraph.showLogs')!();
        assert.equal(state.outputShown, 1);
    });

    it('"Select Interpreter" opens the Python picker, or the setting that overrides it', async () => {
        await extension.activate(fakeContext());
        const select = state.commands.get('fullgraph.selectInterpreter')!;
        // fullgraph.interpreter is set (beforeEach): the Python picker would not change the server's.
        state.pythonExtension = true;
        state.executed = [];
        await select();
        assert.deepEqual(state.executed, [{ command: 'workbench.action.openSettings', args: ['fullgraph.interpreter'] }]);
        setSetting('fullgraph.interpreter', []);
        state.executed = [];
        await select();
        assert.deepEqual(state.executed, [{ command: 'python.setInterpreter', args: [] }]);
        state.pythonExtension = false;
        state.executed = [];
        await select();
        assert.deepEqual(state.executed, [{ command: 'workbench.action.openSettings', args: ['fullgraph.interpreter'] }]);
    });

    it('starts one server per workspace folder, and again when the folders change', async () => {
        state.workspaceFolders = ['/home/ada/a', '/home/ada/b'].map(
            (fsPath, index) =>
                ({ index, name: fsPath.split('/').pop(), uri: { fsPath, toString: () => `file://${fsPath}` } }) as never,
        );
        await extension.activate(fakeContext());
        await until(() => state.messages.length === 2, 'one start (and one install offer) per folder');
        state.folderListeners.forEach((listener) => listener());
        await until(() => state.messages.length === 4, 'a restart of both after the folders changed');
    });

    it('sends a command to the server of the folder that holds the document', () => {
        const folders = ['file:///home/ada/a', 'file:///home/ada/a/sub', 'file:///home/ada/b'];
        assert.equal(extension.folderKeyFor('file:///home/ada/a/m.py', folders), 'file:///home/ada/a');
        assert.equal(extension.folderKeyFor('file:///home/ada/a/sub/m.py', folders), 'file:///home/ada/a/sub');
        assert.equal(
            extension.folderKeyFor('vscode-notebook-cell:/home/ada/b/nb.ipynb#W1sZmlsZQ%3D%3D', folders),
            'file:///home/ada/b',
        );
        assert.equal(extension.folderKeyFor('file:///home/ada/ab/m.py', folders), undefined, 'not a prefix match');
        assert.equal(extension.folderKeyFor(undefined, folders), undefined);
    });

    it('restarts when the workspace becomes trusted', async () => {
        await extension.activate(fakeContext());
        await settle();
        state.trustListeners.forEach((listener) => listener());
        await until(() => state.messages.length === 2, 'a restart after trust was granted');
    });
});
