/** The extension's package.json, as the tests read it (what VS Code reads). */
import * as fs from 'fs';
import * as path from 'path';

export const extensionRoot = path.resolve(__dirname, '..', '..');
export const repositoryRoot = path.resolve(extensionRoot, '..');

export interface Manifest {
    activationEvents: string[];
    capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
    contributes: {
        commands: { command: string; title: string }[];
        configuration: { properties: Record<string, { default: unknown; enum?: string[] }> };
    };
}

export const manifest: Manifest = JSON.parse(fs.readFileSync(path.join(extensionRoot, 'package.json'), 'utf8'));
