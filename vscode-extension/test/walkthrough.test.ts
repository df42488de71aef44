/**
 * The manifest's packaging and walkthrough: `vsce package` builds on its own,
 * the new commands are contributed, and every walkthrough step points at a page
 * that ships in the .vsix and at commands that exist.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { extensionRoot } from './manifest';

interface Step {
    id: string;
    title: string;
    description: string;
    media: { markdown?: string };
    completionEvents?: string[];
}

const manifest = JSON.parse(fs.readFileSync(path.join(extensionRoot, 'package.json'), 'utf8'));
const commands = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
const steps: Step[] = manifest.contributes.walkthroughs[0].steps;

describe('manifest', () => {
    it('builds before packaging (vscode:prepublish), so `vsce package` works from a clean checkout', () => {
        assert.equal(manifest.scripts['vscode:prepublish'], 'npm run build');
        assert.match(manifest.scripts.build, /tsc -p .*node esbuild\.mjs/);
    });

    it('contributes "fullgraph: Show Logs" and "fullgraph: Select Interpreter"', () => {
        const titles = Object.fromEntries(
            manifest.contributes.commands.map((c: { command: string; title: string; category: string }) => [
                c.command,
                `${c.category}: ${c.title}`,
            ]),
        );
        assert.equal(titles['fullgraph.showLogs'], 'fullgraph: Show Logs');
        assert.equal(titles['fullgraph.selectInterpreter'], 'fullgraph: Select Interpreter');
    });

    it('activates on Jupyter notebooks', () => {
        assert.ok(manifest.activationEvents.includes('onNotebook:jupyter-notebook'));
    });
});

describe('walkthrough', () => {
    const shipped = fs
        .readFileSync(path.join(extensionRoot, '.vscodeignore'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('!'))
        .map((line) => line.slice(1));

    it('goes from install to the first fixed break, then to runtime analysis', () => {
        assert.deepEqual(
            steps.map((step) => step.id),
            ['install', 'find', 'fix', 'analyze'],
        );
        assert.ok(steps[2].completionEvents?.includes('onCommand:fullgraph.fixAll'));
    });

    for (const step of steps) {
        it(`step "${step.id}": its page exists and ships, its commands exist`, () => {
            const page = step.media.markdown!;
            assert.ok(fs.existsSync(path.join(extensionRoot, page)), `${page} is missing`);
            const dir = path.dirname(page);
            assert.ok(
                shipped.includes(page) || shipped.includes(`${dir}/*.md`),
                `${page} is left out of the .vsix by .vscodeignore`,
            );
            const linked = [...step.description.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1]);
            const events = (step.completionEvents ?? [])
                .filter((event) => event.startsWith('onCommand:'))
                .map((event) => event.slice('onCommand:'.length));
            for (const command of [...linked, ...events]) {
                assert.ok(commands.has(command), `${command} is not a contributed command`);
            }
        });
    }
});
