// First: replaces src/vscodeapi before the modules under test load it.
import { fakeEditor, reset, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import {
    ADD_ENTRYPOINT,
    ANALYZE,
    COMPILE_FUNCTION,
    commandArguments,
    cursorLocation,
    FIX_ALL,
    lensArgumentsAt,
    progressTitle,
    RESTART,
    SELECT_INTERPRETER,
    runServerCommand,
    SERVER_COMMANDS,
    SHOW_LOGS,
    ServerLens,
    UserFacingError,
} from '../src/commands';
import { manifest } from './manifest';

const MODEL = 'file:///home/ada/project/model%20v2.py';

/** The server's lenses on model.py: `class Model` at line 3, `def forward` at line 8, `def build` at line 14. */
const target = (qualname: string) => ({ uri: MODEL, qualname });
const lens = (line: number, command: string, args: unknown[]): ServerLens => ({
    range: { start: { line } },
    command: { command, arguments: args },
});
const LENSES: ServerLens[] = [
    lens(3, ANALYZE, [target('Model')]),
    lens(3, COMPILE_FUNCTION, [target('Model')]),
    lens(8, ANALYZE, [target('Model.forward')]),
    lens(8, COMPILE_FUNCTION, [target('Model.forward')]),
    lens(14, ADD_ENTRYPOINT, ['model:build']),
    lens(14, COMPILE_FUNCTION, ['model:build']),
];
const lensesOfModel = async (uri: string) => (uri === MODEL ? LENSES : []);
const at = (line: number) => ({ uri: MODEL, position: { line, character: 4 } });

describe('command arguments', () => {
    it('passes arguments from a code lens through untouched', async () => {
        const lensArgs = [{ entry: 'model:build' }, 3];
        assert.deepEqual(await commandArguments(COMPILE_FUNCTION, lensArgs, at(10), lensesOfModel), lensArgs);
    });

    it('analyzes every configured entrypoint from the palette', async () => {
        assert.deepEqual(await commandArguments(ANALYZE, [], at(10), lensesOfModel), []);
        assert.deepEqual(await commandArguments(ANALYZE, [], undefined, lensesOfModel), []);
    });

    it("compiles the function at the cursor with the server's own lens arguments", async () => {
        assert.deepEqual(await commandArguments(COMPILE_FUNCTION, [], at(10), lensesOfModel), [target('Model.forward')]);
        assert.deepEqual(await commandArguments(COMPILE_FUNCTION, [], at(8), lensesOfModel), [target('Model.forward')]);
        assert.deepEqual(await commandArguments(COMPILE_FUNCTION, [], at(5), lensesOfModel), [target('Model')]);
        assert.deepEqual(await commandArguments(ADD_ENTRYPOINT, [], at(20), lensesOfModel), ['model:build']);
    });

    it('tells the user when there is no function at the cursor', async () => {
        await assert.rejects(commandArguments(COMPILE_FUNCTION, [], at(1), lensesOfModel), /no function or nn.Module class at the cursor/);
        await assert.rejects(commandArguments(ADD_ENTRYPOINT, [], undefined, lensesOfModel), UserFacingError);
        await assert.rejects(commandArguments(ADD_ENTRYPOINT, [], at(9), async () => null), UserFacingError);
    });

    it('picks the lens on the nearest def at or above a line', () => {
        assert.deepEqual(lensArgumentsAt(LENSES, 13), [target('Model.forward')]);
        assert.equal(lensArgumentsAt(LENSES, 2), undefined);
        assert.equal(lensArgumentsAt([], 2), undefined);
    });

    it('reads the cursor of a Python editor only', () => {
        assert.deepEqual(cursorLocation(fakeEditor(MODEL, 'python', 9, 8)), { uri: MODEL, position: { line: 9, character: 8 } });
        assert.equal(cursorLocation(fakeEditor('file:///notes.md', 'markdown', 0, 0)), undefined);
        assert.equal(cursorLocation(undefined), undefined);
    });

    it('titles the progress notification with what runs', () => {
        assert.equal(progressTitle(ANALYZE, []), 'fullgraph: Analyzing entrypoints…');
        assert.equal(progressTitle(ANALYZE, ['model:build']), 'fullgraph: Analyzing model:build…');
        assert.equal(progressTitle(COMPILE_FUNCTION, [target('Model.forward')]), 'fullgraph: Compiling Model.forward…');
        assert.equal(progressTitle(COMPILE_FUNCTION, [{ entry: 'model:build' }]), 'fullgraph: Compiling model:build…');
        assert.equal(progressTitle(ADD_ENTRYPOINT, ['model:build']), 'fullgraph: Analyzing model:build…');
        assert.equal(progressTitle(FIX_ALL, []), undefined);
    });
});

describe('contributed commands', () => {
    it('contributes the seven commands, each with a title', () => {
        const contributed = manifest.contributes.commands.map((c) => c.command).sort();
        assert.deepEqual(contributed, [...SERVER_COMMANDS, FIX_ALL, RESTART, SHOW_LOGS, SELECT_INTERPRETER].sort());
        assert.ok(manifest.contributes.commands.every((c) => c.title.length > 0));
    });

    it('activates on Python files', () => {
        assert.ok(manifest.activationEvents.includes('onLanguage:python'));
    });
});

describe('running a server command from the palette', () => {
    beforeEach(() => {
        reset();
        state.activeEditor = fakeEditor(MODEL, 'python', 10, 8);
    });

    /** A server connection that records what it is sent and answers `result`. */
    function recordingServer(result: unknown = null) {
        const sent: unknown[][] = [];
        const server = {
            execute: async (args: unknown[]) => {
                sent.push(args);
                if (result instanceof Error) {
                    throw result;
                }
                return result;
            },
            codeLenses: lensesOfModel,
        };
        return { server, sent };
    }

    it('analyzes with a progress notification and returns the summary', async () => {
        const { server, sent } = recordingServer({ results: [] });
        assert.deepEqual(await runServerCommand(ANALYZE, [], server), { results: [] });
        assert.deepEqual(sent, [[]]);
        assert.deepEqual(state.progressTitles, ['fullgraph: Analyzing entrypoints…']);
    });

    it('asks for workspace trust instead of running user code', async () => {
        state.trusted = false;
        state.messageChoice = 'Manage Workspace Trust';
        const { server, sent } = recordingServer();
        assert.equal(await runServerCommand(COMPILE_FUNCTION, [], server), undefined);
        assert.equal(await runServerCommand(ANALYZE, ['model:build'], server), undefined);
        assert.deepEqual(sent, []);
        assert.match(state.messages[0].text, /runs your code/);
        assert.deepEqual(state.executed[0], { command: 'workbench.trust.manage', args: [] });
    });

    it('adds the function at the cursor as an entrypoint, then shows the analysis running', async () => {
        const { server, sent } = recordingServer({ added: true });
        await runServerCommand(ADD_ENTRYPOINT, [], server);
        assert.deepEqual(sent, [[target('Model.forward')]]);
        assert.deepEqual(state.progressTitles, ['fullgraph: Analyzing Model.forward…']);
    });

    it('asks for trust before adding an entrypoint too (the server analyses it at once)', async () => {
        state.trusted = false;
        const { server, sent } = recordingServer({ added: true });
        await runServerCommand(ADD_ENTRYPOINT, [], server);
        assert.deepEqual(sent, []);
        assert.equal(state.messages[0].level, 'warning');
    });

    it('shows a missing function as a message, sending nothing', async () => {
        state.activeEditor = undefined;
        const { server, sent } = recordingServer();
        await runServerCommand(COMPILE_FUNCTION, [], server);
        assert.deepEqual(sent, []);
        assert.equal(state.messages[0].level, 'error');
        assert.match(state.messages[0].text, /Compile this function needs a Python file/);
    });

    it('opens the wrapper file the server created', async () => {
        const created = 'file:///home/ada/project/.fullgraph/compiled/model_Model_forward_compiled.py';
        await runServerCommand(COMPILE_FUNCTION, [], recordingServer({ applied: true, uri: created, source: '#' }).server);
        assert.deepEqual(state.shownDocuments, [created]);
        assert.deepEqual(state.untitledDocuments, []);
    });

    it('opens returned wrapper source in a new editor when no file was created', async () => {
        const result = { applied: false, uri: 'file:///x.py', source: '# Constructed by fullgraph\n' };
        await runServerCommand(COMPILE_FUNCTION, [], recordingServer(result).server);
        assert.deepEqual(state.untitledDocuments, [{ content: '# Constructed by fullgraph\n', language: 'python' }]);
    });

    it('shows a server error, and stays quiet when the user cancelled', async () => {
        await runServerCommand(ANALYZE, [], recordingServer(new Error('worker crashed')).server);
        assert.deepEqual(
            state.messages.map((m) => [m.level, m.text]),
            [['error', 'fullgraph: fullgraph.analyze failed: worker crashed']],
        );
        const cancelled = Object.assign(new Error('cancelled'), { code: -32800 });
        await runServerCommand(ANALYZE, [], recordingServer(cancelled).server);
        assert.equal(state.messages.length, 1);
    });
});
