// First: replaces src/vscodeapi before the modules under test load it.
import { reset, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import {
    checkServerImportable,
    chooseInterpreter,
    findInterpreter,
    installCommandLine,
    serverCommand,
} from '../src/python';
import { repositoryRoot } from './manifest';

type Callback = (error: Error | null, stdout: string, stderr: string) => void;

/** An execFile stand-in that fails the way a real process would. */
function failingRun(error: { code?: string | number; message?: string } | null, stderr = '') {
    const calls: { file: string; args: string[] }[] = [];
    const run = (file: string, args: string[], _options: unknown, callback: Callback) => {
        calls.push({ file, args });
        callback(error ? Object.assign(new Error(error.message ?? 'failed'), error) : null, '', stderr);
    };
    return { run, calls };
}

/** The Python extension's environments API, reduced to what python.ts calls. */
function pythonExtensionWith(executable: string | undefined, fail = false) {
    return {
        getActiveEnvironmentPath: () => ({ id: 'env', path: '/envs/torch' }),
        resolveEnvironment: async () => {
            if (fail) {
                throw new Error('Python extension still loading');
            }
            return { executable: { uri: executable ? { fsPath: executable } : undefined } };
        },
        onDidChangeActiveEnvironmentPath: () => ({ dispose: () => undefined }),
    } as never;
}

describe('interpreter choice', () => {
    beforeEach(reset);

    it('prefers the fullgraph.interpreter setting', () => {
        assert.deepEqual(chooseInterpreter(['/venv/bin/python', '-X', 'utf8'], '/envs/torch/bin/python'), {
            command: ['/venv/bin/python', '-X', 'utf8'],
            source: 'setting',
        });
    });

    it("uses the Python extension's active environment when the setting is empty", () => {
        assert.deepEqual(chooseInterpreter([], '/envs/torch/bin/python'), {
            command: ['/envs/torch/bin/python'],
            source: 'python-extension',
        });
        assert.equal(chooseInterpreter(['  '], '/envs/torch/bin/python').source, 'python-extension');
    });

    it('falls back to python3, or python on Windows', () => {
        assert.deepEqual(chooseInterpreter([], undefined, 'linux'), { command: ['python3'], source: 'default' });
        assert.deepEqual(chooseInterpreter([], undefined, 'win32'), { command: ['python'], source: 'default' });
    });

    it('asks the Python extension for the active environment', async () => {
        state.pythonEnvironments = pythonExtensionWith('/envs/torch/bin/python');
        assert.deepEqual(await findInterpreter([]), { command: ['/envs/torch/bin/python'], source: 'python-extension' });
        assert.equal((await findInterpreter(['/mine/python'])).source, 'setting');
    });

    it('falls back when the Python extension is absent or fails', async () => {
        const fallback = process.platform === 'win32' ? 'python' : 'python3';
        assert.deepEqual(await findInterpreter([]), { command: [fallback], source: 'default' });
        state.pythonEnvironments = pythonExtensionWith('/envs/torch/bin/python', true);
        assert.deepEqual(await findInterpreter([]), { command: [fallback], source: 'default' });
        state.pythonEnvironments = pythonExtensionWith(undefined);
        assert.equal((await findInterpreter([])).source, 'default');
    });
});

describe('server command line', () => {
    it('runs the server module with the interpreter and its fixed arguments', () => {
        assert.deepEqual(serverCommand({ command: ['/venv/bin/python', '-X', 'utf8'], source: 'setting' }), {
            command: '/venv/bin/python',
            args: ['-X', 'utf8', '-m', 'fullgraph.lsp_server'],
        });
    });
});

describe('is fullgraph importable', () => {
    const interpreter = { command: ['/venv/bin/python', '-I'], source: 'setting' as const };

    it('probes with find_spec, passing the fixed arguments', async () => {
        const { run, calls } = failingRun(null);
        assert.deepEqual(await checkServerImportable(interpreter, run), { ok: true, detail: '' });
        assert.equal(calls[0].file, '/venv/bin/python');
        assert.equal(calls[0].args[0], '-I');
        assert.match(calls[0].args[2], /find_spec\("fullgraph\.lsp_server"\)/);
        assert.equal(calls.length, 1);
    });

    it('says which interpreter lacks fullgraph', async () => {
        const { run } = failingRun({ code: 3 });
        assert.deepEqual(await checkServerImportable(interpreter, run), {
            ok: false,
            detail: 'fullgraph is not installed in /venv/bin/python',
        });
    });

    it("passes on the interpreter's own error", async () => {
        const { run } = failingRun({ code: 1 }, 'SyntaxError: bad sitecustomize\n');
        assert.deepEqual(await checkServerImportable(interpreter, run), {
            ok: false,
            detail: 'SyntaxError: bad sitecustomize',
        });
    });

    it('says fullgraph is missing from a real Python without it', async (t) => {
        // -S: no site-packages, so fullgraph cannot be found whatever is installed.
        const bare = { command: ['python3', '-S'], source: 'default' as const };
        const result = await checkServerImportable(bare);
        if (result.detail === 'interpreter not found: python3') {
            return t.skip('no python3 on PATH');
        }
        assert.deepEqual(result, { ok: false, detail: 'fullgraph is not installed in python3' });
    });

    it("finds the server module in the repository's .venv (real process)", async (t) => {
        const venvPython = path.join(repositoryRoot, '.venv', 'bin', 'python');
        if (!fs.existsSync(venvPython)) {
            return t.skip(`no ${venvPython}: run \`make venv\` first`);
        }
        assert.deepEqual(await checkServerImportable({ command: [venvPython], source: 'setting' }), { ok: true, detail: '' });
    });

    it('reports a missing interpreter by name (real process)', async () => {
        const missing = { command: ['/nonexistent/bin/python3'], source: 'setting' as const };
        assert.deepEqual(await checkServerImportable(missing), {
            ok: false,
            detail: 'interpreter not found: /nonexistent/bin/python3',
        });
    });
});

describe('install command', () => {
    it('installs into the chosen interpreter with pip, quoting paths with spaces', () => {
        assert.equal(
            installCommandLine({ command: ['/usr/bin/python3'], source: 'default' }, 'linux'),
            '/usr/bin/python3 -m pip install fullgraph',
        );
        assert.equal(
            installCommandLine({ command: ["/home/o'neil/my env/bin/python"], source: 'setting' }, 'darwin'),
            `'/home/o'\\''neil/my env/bin/python' -m pip install fullgraph`,
        );
        assert.equal(
            installCommandLine({ command: ['C:\\Program Files\\Python\\python.exe'], source: 'setting' }, 'win32'),
            '& "C:\\Program Files\\Python\\python.exe" -m pip install fullgraph',
        );
    });
});
