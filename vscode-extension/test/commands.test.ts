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
    progressTitle,
    RESTART,
    runServerCommand,
    SERVER_COMMANDS,
    UserFacingError,
} from '../src/commands';
import { manifest } from './manifest';

const MODEL = 'file:///home/ada/project/model%20v2.py';
const cursor = { uri: MODEL, position: { line: 9, character: 8 } };

describe('command arguments', () => {
    it('passes arguments from a code lens through untouched', () => {
        const lensArgs = [{ entry: 'model.py:Model.forward' }, 3];
        assert.deepEqual(commandArguments(COMPILE_FUNCTION, lensArgs, cursor), lensArgs);
    });

    it('sends the cursor when run from the palette', () => {
        for (const command of SERVER_COMMANDS) {
            assert.deepEqual(commandArguments(command, [], cursor), [cursor]);
        }
    });

    it('analyzes the configured entrypoints when no Python file is open', () => {
        assert.deepEqual(commandArguments(ANALYZE, [], undefined), []);
    });

    it('tells the user to open a function for compile and add-entrypoint', () => {
        assert.throws(() => commandArguments(COMPILE_FUNCTION, [], undefined), UserFacingError);
        assert.throws(() => commandArguments(ADD_ENTRYPOINT, [], undefined), /cursor inside a function/);
    });

    it('reads the cursor of a Python editor only', () => {
        assert.deepEqual(cursorLocation(fakeEditor(MODEL, 'python', 9, 8)), cursor);
        assert.equal(cursorLocation(fakeEditor('file:///notes.md', 'markdown', 0, 0)), undefined);
        assert.equal(cursorLocation(undefined), undefined);
    });

    it('titles the progress notification with the file name', () => {
        assert.equal(progressTitle(ANALYZE, [cursor]), 'fullgraph: Analyzing model v2.py…');
        assert.equal(progressTitle(ANALYZE, []), 'fullgraph: Analyzing entrypoints…');
        assert.equal(progressTitle(COMPILE_FUNCTION, [cursor]), 'fullgraph: Compiling model v2.py…');
        assert.equal(progressTitle(ADD_ENTRYPOINT, [cursor]), undefined);
    });
});

describe('contributed commands', () => {
    it('contributes the five commands, each with a title', () => {
        const contributed = manifest.contributes.commands.map((c) => c.command).sort();
        assert.deepEqual(contributed, [...SERVER_COMMANDS, FIX_ALL, RESTART].sort());
        assert.ok(manifest.contributes.commands.every((c) => c.title.length > 0));
    });

    it('activates on Python files', () => {
        assert.ok(manifest.activationEvents.includes('onLanguage:python'));
    });
});

describe('running a server command from the palette', () => {
    beforeEach(() => {
        reset();
        state.activeEditor = fakeEditor(MODEL, 'python', 9, 8);
    });

    function recordingSend(result: unknown = null) {
        const sent: unknown[][] = [];
        const send = async (args: unknown[]) => {
            sent.push(args);
            if (result instanceof Error) {
                throw result;
            }
            return result;
        };
        return { send, sent };
    }

    it('sends the cursor and shows a progress notification while it analyzes', async () => {
        const { send, sent } = recordingSend({ graphs: 1 });
        assert.deepEqual(await runServerCommand(ANALYZE, [], send), { graphs: 1 });
        assert.deepEqual(sent, [[cursor]]);
        assert.deepEqual(state.progressTitles, ['fullgraph: Analyzing model v2.py…']);
    });

    it('asks for workspace trust instead of running user code', async () => {
        state.trusted = false;
        state.messageChoice = 'Manage Workspace Trust';
        const { send, sent } = recordingSend();
        assert.equal(await runServerCommand(COMPILE_FUNCTION, [], send), undefined);
        assert.deepEqual(sent, []);
        assert.match(state.messages[0].text, /runs your code/);
        assert.deepEqual(state.executed, [{ command: 'workbench.trust.manage', args: [] }]);
    });

    it('adds an entrypoint in an untrusted workspace (no code runs)', async () => {
        state.trusted = false;
        const { send, sent } = recordingSend(true);
        await runServerCommand(ADD_ENTRYPOINT, [], send);
        assert.deepEqual(sent, [[cursor]]);
        assert.deepEqual(state.progressTitles, []);
    });

    it('shows a missing function as a message, sending nothing', async () => {
        state.activeEditor = undefined;
        const { send, sent } = recordingSend();
        await runServerCommand(COMPILE_FUNCTION, [], send);
        assert.deepEqual(sent, []);
        assert.equal(state.messages[0].level, 'error');
        assert.match(state.messages[0].text, /Compile this function needs a Python file/);
    });

    it('opens returned wrapper source in an editor', async () => {
        const { send } = recordingSend('# Constructed by fullgraph\n');
        await runServerCommand(COMPILE_FUNCTION, [], send);
        assert.deepEqual(state.untitledDocuments, [{ content: '# Constructed by fullgraph\n', language: 'python' }]);
    });

    it('shows a server error, and stays quiet when the user cancelled', async () => {
        await runServerCommand(ANALYZE, [], recordingSend(new Error('worker crashed')).send);
        assert.deepEqual(
            state.messages.map((m) => [m.level, m.text]),
            [['error', 'fullgraph: fullgraph.analyze failed: worker crashed']],
        );
        const cancelled = Object.assign(new Error('cancelled'), { code: -32800 });
        await runServerCommand(ANALYZE, [], recordingSend(cancelled).send);
        assert.equal(state.messages.length, 1);
    });
});
