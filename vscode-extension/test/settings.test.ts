// First: replaces src/vscodeapi before the modules under test load it.
import { reset, setSetting, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { beforeEach, describe, it } from 'node:test';
import {
    affectsServer,
    configurationFor,
    getServerSettings,
    PROJECT_KEYS,
    resolveVariables,
    SECTION,
} from '../src/settings';
import { manifest } from './manifest';

/** Puts every contributed setting's default in the fake, as VS Code does on a fresh install. */
function loadManifestDefaults(): void {
    for (const [key, spec] of Object.entries(manifest.contributes.configuration.properties)) {
        setSetting(key, spec.default, 'defaultValue');
    }
}

const folder = { uri: { fsPath: '/home/ada/project' }, name: 'project', index: 0 } as never;

describe('settings sent to the server', () => {
    beforeEach(() => {
        reset();
        loadManifestDefaults();
        state.workspaceFolders = [folder];
    });

    it('on a fresh install sends diagnostics and interpreter, and leaves pyproject keys to the project', () => {
        assert.deepEqual(getServerSettings(), {
            diagnostics: { static: true, runtime: true },
            interpreter: [],
        });
    });

    it('sends entrypoints, timeout and backend once the user sets them', () => {
        setSetting('fullgraph.entrypoints', ['examples/mlp.py:main']);
        setSetting('fullgraph.timeout', 12, 'globalValue');
        setSetting('fullgraph.backend', 'eager', 'workspaceFolderValue');
        assert.deepEqual(getServerSettings(), {
            entrypoints: ['examples/mlp.py:main'],
            timeout: 12,
            backend: 'eager',
            diagnostics: { static: true, runtime: true },
            interpreter: [],
        });
    });

    it('turns runtime diagnostics off in an untrusted workspace, static rules stay on', () => {
        state.trusted = false;
        setSetting('fullgraph.diagnostics.runtime', true);
        assert.deepEqual(getServerSettings().diagnostics, { static: true, runtime: false });
    });

    it('respects the user turning either kind of diagnostics off', () => {
        setSetting('fullgraph.diagnostics.static', false);
        setSetting('fullgraph.diagnostics.runtime', false);
        assert.deepEqual(getServerSettings().diagnostics, { static: false, runtime: false });
    });

    it('expands ${workspaceFolder} in the interpreter setting', () => {
        setSetting('fullgraph.interpreter', ['${workspaceFolder}/.venv/bin/python', '-X', 'utf8']);
        assert.deepEqual(getServerSettings().interpreter, ['/home/ada/project/.venv/bin/python', '-X', 'utf8']);
    });

    it('every key the server reads is a contributed setting', () => {
        const contributed = Object.keys(manifest.contributes.configuration.properties);
        for (const key of ['entrypoints', 'timeout', 'backend', 'diagnostics.static', 'diagnostics.runtime', 'interpreter']) {
            assert.ok(contributed.includes(`${SECTION}.${key}`), `fullgraph.${key} is not in package.json`);
        }
        assert.deepEqual(manifest.contributes.configuration.properties['fullgraph.backend'].enum, ['inductor', 'eager']);
    });

    it('forwards every contributed setting the user sets, under its own key', () => {
        const contributed = Object.keys(manifest.contributes.configuration.properties)
            .map((key) => key.slice(`${SECTION}.`.length))
            .filter((key) => key !== 'trace.server' && key !== 'interpreter' && !key.startsWith('diagnostics.'));
        assert.deepEqual([...contributed].sort(), [...PROJECT_KEYS].sort());
        const values: Record<string, unknown> = {
            entrypoints: ['pkg.model:build'],
            timeout: 9,
            memoryMb: 512,
            backend: 'eager',
            python: '/opt/py/bin/python',
            runOnSave: false,
            debounceMs: 40,
            ignore: ['FG104'],
            breakSeverity: 'error',
            docsBaseUrl: 'https://example.org/docs',
            compiledDir: 'out/compiled',
        };
        for (const [key, value] of Object.entries(values)) {
            setSetting(`fullgraph.${key}`, value);
        }
        const sent = getServerSettings() as unknown as Record<string, unknown>;
        for (const [key, value] of Object.entries(values)) {
            assert.deepEqual(sent[key], value, `fullgraph.${key} is not forwarded`);
        }
    });

    it('restricts the interpreter settings in untrusted workspaces', () => {
        assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
        assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations, [
            'fullgraph.interpreter',
            'fullgraph.python',
        ]);
    });
});

describe('resolveVariables', () => {
    it('expands userHome and env variables, leaves unknown text alone', () => {
        assert.equal(resolveVariables('${userHome}/py', undefined), `${os.homedir()}/py`);
        assert.equal(resolveVariables('${env:VENV}/bin/python', undefined, { VENV: '/opt/venv' }), '/opt/venv/bin/python');
        assert.equal(resolveVariables('${env:MISSING}x', undefined, {}), 'x');
        assert.equal(resolveVariables('$HOME/${other}', undefined), '$HOME/${other}');
    });

    it('keeps ${workspaceFolder} visible when there is no folder', () => {
        assert.equal(resolveVariables('${workspaceFolder}/python', undefined), '${workspaceFolder}/python');
    });
});

describe('workspace/configuration answers', () => {
    const settings = { timeout: 5, diagnostics: { static: true, runtime: false }, interpreter: [] };

    it('answers the fullgraph section with the same object as the initialization options', () => {
        assert.deepEqual(configurationFor('fullgraph', settings), { ours: true, value: settings });
        assert.deepEqual(configurationFor('fullgraph.diagnostics.runtime', settings), { ours: true, value: false });
        assert.deepEqual(configurationFor('fullgraph.entrypoints', settings), { ours: true, value: null });
    });

    it('leaves other sections to VS Code', () => {
        assert.equal(configurationFor('python', settings).ours, false);
        assert.equal(configurationFor('fullgraphx', settings).ours, false);
        assert.equal(configurationFor(undefined, settings).ours, false);
    });
});

describe('affectsServer', () => {
    it('restarts for fullgraph settings only', () => {
        assert.equal(affectsServer({ affectsConfiguration: (s: string) => s === 'fullgraph' }), true);
        assert.equal(affectsServer({ affectsConfiguration: (s: string) => s === 'python' }), false);
    });
});

