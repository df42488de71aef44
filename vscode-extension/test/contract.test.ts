/**
 * Contract test: the real Python server, driven the way the extension drives it.
 *
 * Spawns `<python> -m fullgraph.lsp_server` (python: $FULLGRAPH_PYTHON, else the
 * repository's .venv) and talks to it with vscode-jsonrpc. It sends the
 * initialization options and `workspace/configuration` answers that
 * src/settings.ts produces, asks for the code lenses and the palette arguments
 * src/commands.ts would send, and checks what a VS Code user would see:
 * diagnostics with source "fullgraph", code actions, and a command that runs
 * the configured entrypoint. A stray byte on the server's stdout breaks the
 * JSON-RPC stream here.
 *
 * Skips, saying why, while the Python side cannot be imported or does not
 * start (it is written alongside this extension).
 */
// First: replaces src/vscodeapi before the modules under test load it.
import { reset, setSetting, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ANALYZE, COMPILE_FUNCTION, FIX_ALL_KIND, lensArgumentsAt, SERVER_COMMANDS, ServerLens } from '../src/commands';
import { getServerSettings, ServerSettings } from '../src/settings';
import { hasStaticRules, pythonExecutable, ServerSession, STARTUP_MS, whyUnavailable } from './serverSession';

const PRINT_LINE = 13; // 0-based line of the print() in model.py
const FORWARD_LINE = 11; // 0-based line of `def forward`
const ANALYSIS_MS = 180_000;
const STATUSES = ['ok', 'user_exception', 'timeout', 'crashed', 'cancelled', 'config_error'];

const isStatic = (code: unknown) => /^FG1\d\d$/.test(String(code));
const isRuntime = (code: unknown) => /^FG2\d\d$/.test(String(code));

/** The settings the extension sends for a trusted workspace with these user settings. */
function extensionSettings(workspace: string, user: Record<string, unknown>, trusted = true): ServerSettings {
    reset();
    state.trusted = trusted;
    state.workspaceFolders = [{ uri: { fsPath: workspace }, name: 'workspace', index: 0 } as never];
    for (const [key, value] of Object.entries(user)) {
        setSetting(`fullgraph.${key}`, value);
    }
    return getServerSettings();
}

/** Starts a session, or returns why the server cannot be tested (printed once). */
async function startOrSkip(settingsFor: (workspace: string) => ServerSettings): Promise<ServerSession | string> {
    const python = pythonExecutable();
    const unavailable = whyUnavailable(python);
    if (unavailable) {
        console.log(`# contract test skipped: ${unavailable}`);
        return unavailable;
    }
    try {
        return await ServerSession.start(python, settingsFor);
    } catch (error) {
        const reason = `the server does not start yet: ${(error as Error).message}`;
        console.log(`# contract test skipped: ${reason}`);
        return reason;
    }
}

describe('contract with the Python language server', () => {
    let session: ServerSession | string;
    let modelUri = '';
    const live = (t: { skip: (reason: string) => void }): ServerSession | undefined => {
        if (typeof session === 'string') {
            t.skip(session);
            return undefined;
        }
        return session;
    };

    before(async () => {
        session = await startOrSkip((workspace) =>
            extensionSettings(workspace, { entrypoints: ['model:build'], backend: 'eager', timeout: 120 }),
        );
        if (typeof session !== 'string') {
            modelUri = session.open('model.py');
        }
    });
    after(async () => {
        if (typeof session !== 'string') {
            await session.stop();
        }
    });

    it('advertises the commands the extension contributes, code actions and code lenses', (t) => {
        const server = live(t);
        if (!server) return;
        const capabilities = server.initializeResult.capabilities;
        for (const command of SERVER_COMMANDS) {
            assert.ok(capabilities.executeCommandProvider?.commands?.includes(command), `server lacks ${command}`);
        }
        assert.ok(capabilities.codeActionProvider, 'no code actions');
        assert.ok(capabilities.codeLensProvider, 'no code lenses');
    });

    it('shows a fullgraph diagnostic on the print() in forward, pushed and pulled, with fixes', { timeout: STARTUP_MS }, async (t) => {
        const server = live(t);
        if (!server) return;
        if (!hasStaticRules(pythonExecutable())) {
            return t.skip('fullgraph.refactors has no lint_source yet: no static diagnostics to expect');
        }
        const onPrint = await server.waitFor('a fullgraph diagnostic on the print() line', STARTUP_MS, () =>
            server.pushed.get(modelUri)?.find((d) => d.source === 'fullgraph' && d.range.start.line === PRINT_LINE),
        );
        assert.ok(isStatic(onPrint.code), `code ${onPrint.code}`);
        assert.ok(onPrint.message.length > 0);
        // VS Code pulls diagnostics (textDocument/diagnostic) when the server offers it.
        if (server.initializeResult.capabilities.diagnosticProvider) {
            const pulled = await server.pull(modelUri);
            assert.ok(
                pulled.some((d) => d.code === onPrint.code && d.range.start.line === PRINT_LINE && d.source === 'fullgraph'),
                `pulled diagnostics miss ${onPrint.code}: ${JSON.stringify(pulled)}`,
            );
        }

        const actions = await server.connection.sendRequest<any[]>('textDocument/codeAction', {
            textDocument: { uri: modelUri },
            range: onPrint.range,
            context: { diagnostics: [onPrint], triggerKind: 1 },
        });
        assert.ok(Array.isArray(actions), 'code actions must be a list');
        const quickFix = actions.find((action) => action.kind === 'quickfix');
        assert.ok(quickFix, `no quick fix offered for ${onPrint.code}: ${JSON.stringify(actions)}`);
        assert.ok(JSON.stringify(quickFix.edit ?? {}).includes(modelUri), 'the quick fix does not edit model.py');

        const fixAll = await server.connection.sendRequest<any[] | null>('textDocument/codeAction', {
            textDocument: { uri: modelUri },
            range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
            context: { diagnostics: [], only: [FIX_ALL_KIND], triggerKind: 1 },
        });
        // "fullgraph: Fix All" runs editor.action.codeAction with exactly this kind.
        assert.ok(fixAll && fixAll.length > 0, `no ${FIX_ALL_KIND} action`);
        for (const action of fixAll) {
            assert.equal(action.kind, FIX_ALL_KIND);
        }
    });

    it('gives the palette a Compile lens on forward, with arguments naming it', { timeout: STARTUP_MS }, async (t) => {
        const server = live(t);
        if (!server) return;
        const lenses = await server.connection.sendRequest<ServerLens[]>('textDocument/codeLens', {
            textDocument: { uri: modelUri },
        });
        assert.ok(
            lenses.some((lens) => lens.command?.command === COMPILE_FUNCTION && lens.range.start.line === FORWARD_LINE),
            `no "Compile this function" lens on def forward: ${JSON.stringify(lenses)}`,
        );
        // What "fullgraph: Compile This Function" sends with the cursor on the print().
        const args = lensArgumentsAt(lenses, PRINT_LINE);
        assert.ok(args && args.length > 0);
        assert.ok(JSON.stringify(args).includes('forward'), `palette arguments miss forward: ${JSON.stringify(args)}`);
    });

    it('runs fullgraph.analyze on the entrypoint from the settings', { timeout: ANALYSIS_MS }, async (t) => {
        const server = live(t);
        if (!server) return;
        // From the palette "Analyze" sends no arguments: every configured entrypoint.
        const result = await server.connection.sendRequest<any>('workspace/executeCommand', {
            command: ANALYZE,
            arguments: [],
        });
        assert.ok(Array.isArray(result?.results), `unexpected answer: ${JSON.stringify(result)}`);
        assert.deepEqual(
            result.results.map((r: { entry: string }) => r.entry),
            ['model:build'],
            'the server did not analyse the entrypoint sent in the settings',
        );
        assert.ok(STATUSES.includes(result.results[0].status), `status ${result.results[0].status}`);
        if (result.results[0].status === 'ok') {
            // The user sees the break on the print() itself, from the runtime this time.
            await server.waitFor('a runtime (FG2xx) diagnostic on the print() line', STARTUP_MS, () =>
                server.pushed.get(modelUri)?.find((d) => isRuntime(d.code) && d.range.start.line === PRINT_LINE),
            );
        }
        if (server.finished.length > 0) {
            const last = server.finished[server.finished.length - 1];
            assert.equal(last.entry, 'model:build');
            assert.equal(typeof last.graphs, 'number');
            assert.equal(typeof last.breaks, 'number');
            assert.ok(STATUSES.includes(last.status));
        } else {
            console.log('# note: the server sent no fullgraph/analysisFinished notification (the status bar stays idle)');
        }
    });

    it('kept the JSON-RPC stream clean', (t) => {
        const server = live(t);
        if (!server) return;
        assert.deepEqual(server.protocolErrors, [], `protocol errors; server stderr:\n${server.stderr.slice(-2000)}`);
        assert.equal(server.process.exitCode, null, `server died; stderr:\n${server.stderr.slice(-2000)}`);
    });
});

/** The settings keys the server must read: `fullgraph.diagnostics.static` and `fullgraph.diagnostics.runtime`. */
describe('settings the server must honour', () => {
    it('diagnostics.static = false: no static findings', { timeout: STARTUP_MS * 2 }, async (t) => {
        const session = await startOrSkip((workspace) => extensionSettings(workspace, { 'diagnostics.static': false }));
        if (typeof session === 'string') {
            return t.skip(session);
        }
        try {
            const uri = session.open('model.py');
            const pulled = await session.pull(uri);
            assert.deepEqual(pulled.filter((d) => isStatic(d.code)).map((d) => d.code), []);
        } finally {
            await session.stop();
        }
    });

    it('untrusted workspace (diagnostics.runtime = false): saving runs no entrypoint', { timeout: STARTUP_MS * 2 }, async (t) => {
        const session = await startOrSkip((workspace) =>
            extensionSettings(workspace, { entrypoints: ['model:build'], backend: 'eager' }, false),
        );
        if (typeof session === 'string') {
            return t.skip(session);
        }
        try {
            const uri = session.open('model.py');
            session.connection.sendNotification('textDocument/didSave', { textDocument: { uri } });
            // A trusted save shows FG2xx findings within a few seconds (the analyze test above).
            await assert.rejects(
                session.waitFor('runtime findings', 15_000, () =>
                    session.pushed.get(uri)?.find((d) => isRuntime(d.code)),
                ),
                /timed out/,
                'runtime analysis ran in an untrusted workspace',
            );
        } finally {
            await session.stop();
        }
    });
});
