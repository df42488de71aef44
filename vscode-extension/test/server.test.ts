/**
 * The language client's options and middleware (src/server.ts), without VS Code:
 * what the server is started with and what the middleware answers or holds back.
 */
// First: replaces src/vscodeapi before the modules under test load it.
import { reset, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import type { ServerSettings } from '../src/settings';
import { installVscodeStub } from './vscodeStub';

// vscode-languageclient needs some `vscode` to load.
const uninstallStub = installVscodeStub();
// eslint-disable-next-line @typescript-eslint/no-require-imports
const server: typeof import('../src/server') = require('../src/server');

const trusted: ServerSettings = { timeout: 30, diagnostics: { static: true, runtime: true }, interpreter: [] };
const untrusted: ServerSettings = { diagnostics: { static: true, runtime: false }, interpreter: [] };

function optionsFor(settings: ServerSettings, sent: { command: string; args: unknown[] }[] = []) {
    const client = {
        sendRequest: async (_type: unknown, params: { command: string; arguments: unknown[] }) => {
            sent.push({ command: params.command, args: params.arguments });
            return { results: [] };
        },
    } as unknown as LanguageClient;
    return server.clientOptions(
        {
            interpreter: { command: ['/venv/bin/python'], source: 'setting' },
            settings,
            cwd: '/home/ada/project',
            outputChannel: {} as vscode.LogOutputChannel,
            onAnalysisFinished: () => undefined,
        },
        () => client,
    );
}

describe('language client options', () => {
    beforeEach(reset);
    after(uninstallStub);

    it('sends the settings as initialization options and serves Python files and notebook cells', () => {
        const options = optionsFor(trusted);
        assert.deepEqual(options.initializationOptions, trusted);
        assert.deepEqual(options.documentSelector, [
            { scheme: 'file', language: 'python' },
            { scheme: 'untitled', language: 'python' },
            { notebook: 'jupyter-notebook', language: 'python' },
        ]);
    });

    it("tells a folder's server only of the notebooks under that folder", async () => {
        const options = server.clientOptions(
            {
                interpreter: { command: ['/venv/bin/python'], source: 'setting' },
                settings: trusted,
                cwd: '/home/ada/a',
                outputChannel: {} as vscode.LogOutputChannel,
                onAnalysisFinished: () => undefined,
                folder: { uri: { fsPath: '/home/ada/a' }, name: 'a', index: 0 } as never,
            },
            () => ({}) as LanguageClient,
        );
        const opened: string[] = [];
        const next = async (notebook: { uri: { fsPath: string } }) => void opened.push(notebook.uri.fsPath);
        const notebooks = options.middleware!.notebooks!;
        await notebooks.didOpen!({ uri: { fsPath: '/home/ada/a/nb.ipynb' } } as never, [], next as never);
        await notebooks.didOpen!({ uri: { fsPath: '/home/ada/ab/nb.ipynb' } } as never, [], next as never);
        await notebooks.didChange!({ notebook: { uri: { fsPath: '/home/ada/b/nb.ipynb' } } } as never, next as never);
        assert.deepEqual(opened, ['/home/ada/a/nb.ipynb']);
        assert.ok(server.isUnder('/home/ada/a', '/home/ada/a/') && !server.isUnder('/home/ada/ab/x.py', '/home/ada/a'));
    });

    it("serves one workspace folder's files and notebooks (multi-root: a server per folder)", () => {
        assert.deepEqual(server.documentSelector('/home/ada/project/', false), [
            { scheme: 'file', language: 'python', pattern: '/home/ada/project/**/*' },
            { notebook: { notebookType: 'jupyter-notebook', pattern: '/home/ada/project/**/*' }, language: 'python' },
        ]);
        const first = server.documentSelector('/home/ada/project', true) as unknown[];
        assert.deepEqual(first[1], { scheme: 'untitled', language: 'python' }, 'the first folder serves untitled files');
    });

    it('answers workspace/configuration for fullgraph with the same settings, other sections from VS Code', async () => {
        const configuration = optionsFor(trusted).middleware!.workspace!.configuration!;
        const fromVscode = async () => ['vscode:python', 'vscode:fullgraph', 'vscode:timeout'];
        const answer = await configuration(
            { items: [{ section: 'python' }, { section: 'fullgraph' }, { section: 'fullgraph.timeout' }] },
            {} as never,
            fromVscode as never,
        );
        assert.deepEqual(answer, ['vscode:python', trusted, 30]);
    });

    it('passes saves on while runtime analysis is on, holds them back when it is off', async () => {
        const saved: unknown[] = [];
        const next = async (document: unknown) => void saved.push(document);
        const document = { uri: 'file:///home/ada/project/model.py' } as never;
        await optionsFor(trusted).middleware!.didSave!(document, next);
        assert.deepEqual(saved, [document]);
        await optionsFor(untrusted).middleware!.didSave!(document, next);
        assert.deepEqual(saved, [document], 'a save reached the server with runtime analysis off');
    });

    it('routes server commands through the palette logic (analyze: every entrypoint)', async () => {
        const sent: { command: string; args: unknown[] }[] = [];
        const executeCommand = optionsFor(trusted, sent).middleware!.executeCommand!;
        await executeCommand('fullgraph.analyze', [], (() => undefined) as never);
        assert.deepEqual(sent, [{ command: 'fullgraph.analyze', args: [] }]);
        assert.deepEqual(state.progressTitles, ['fullgraph: Analyzing entrypoints…']);
    });
});
