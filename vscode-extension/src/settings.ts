/**
 * Reads the `fullgraph.*` settings and turns them into the object the language
 * server receives, both as initialization options and as the answer to its
 * `workspace/configuration` request for the section `fullgraph`.
 *
 * Every setting the server reads is a `fullgraph.*` setting here (one model
 * for CLI, server and extension: docs/configuration.md). The server merges
 * these settings over `[tool.fullgraph]` in pyproject.toml, which can set the
 * same keys, so all but `diagnostics` and `interpreter` are sent only when the
 * user set them in VS Code: a default sent on every start would silently
 * override the project's own configuration.
 */
import * as os from 'os';
import type * as vscode from 'vscode';
import { getConfiguration, getWorkspaceFolders, isWorkspaceTrusted } from './vscodeapi';

export const SECTION = 'fullgraph';

export type Backend = 'inductor' | 'eager';
export type Severity = 'error' | 'warning' | 'information' | 'hint';

export interface DiagnosticsSettings {
    /** Static rules (FG1xx) on open and change; never runs user code. */
    static: boolean;
    /** Runtime findings (FG2xx) from analysing entrypoints; runs user code. */
    runtime: boolean;
}

/** Exactly the keys the server reads under `fullgraph.`; absent keys mean "not set here". */
export interface ServerSettings {
    entrypoints?: string[];
    timeout?: number;
    memoryMb?: number;
    backend?: Backend;
    python?: string | null;
    runOnSave?: boolean;
    debounceMs?: number;
    ignore?: string[];
    breakSeverity?: Severity;
    docsBaseUrl?: string;
    compiledDir?: string;
    diagnostics: DiagnosticsSettings;
    interpreter: string[];
}

/** The part of `vscode.WorkspaceConfiguration` this module uses. */
export type ConfigReader = Pick<vscode.WorkspaceConfiguration, 'get' | 'inspect'>;

/** Settings the project may also set in pyproject.toml: sent only when set in VS Code. */
export const PROJECT_KEYS = [
    'entrypoints',
    'timeout',
    'memoryMb',
    'backend',
    'python',
    'runOnSave',
    'debounceMs',
    'ignore',
    'breakSeverity',
    'docsBaseUrl',
    'compiledDir',
] as const;

function isSetByUser(config: ConfigReader, key: string): boolean {
    const inspected = config.inspect(key);
    if (!inspected) {
        return false;
    }
    return [
        inspected.globalValue,
        inspected.workspaceValue,
        inspected.workspaceFolderValue,
        inspected.globalLanguageValue,
        inspected.workspaceLanguageValue,
        inspected.workspaceFolderLanguageValue,
    ].some((value) => value !== undefined);
}

/**
 * Expands `${workspaceFolder}`, `${userHome}`, `${cwd}` and `${env:NAME}` in
 * one setting value, the variables users write in interpreter paths.
 */
export function resolveVariables(
    value: string,
    workspaceFolder: string | undefined,
    env: NodeJS.ProcessEnv = process.env,
): string {
    return value.replace(/\$\{(workspaceFolder|userHome|cwd|env:([^}]+))\}/g, (whole, name, envName) => {
        if (envName !== undefined) {
            return env[envName] ?? '';
        }
        if (name === 'workspaceFolder') {
            // Left as written when there is no folder, so the error names the variable.
            return workspaceFolder ?? whole;
        }
        if (name === 'userHome') {
            return os.homedir();
        }
        return process.cwd();
    });
}

/**
 * The settings object sent to the server, from a configuration reader.
 * Untrusted workspaces get static rules only: runtime analysis executes the
 * user's code.
 */
export function resolveSettings(
    config: ConfigReader,
    trusted: boolean,
    workspaceFolder?: string,
): ServerSettings {
    const settings: ServerSettings = {
        diagnostics: {
            static: config.get<boolean>('diagnostics.static', true),
            runtime: trusted && config.get<boolean>('diagnostics.runtime', true),
        },
        interpreter: (config.get<string[]>('interpreter', []) ?? []).map((part) =>
            resolveVariables(part, workspaceFolder),
        ),
    };
    for (const key of PROJECT_KEYS) {
        if (isSetByUser(config, key)) {
            (settings as unknown as Record<string, unknown>)[key] = config.get(key);
        }
    }
    return settings;
}

/** The folder whose settings configure the (single) server: the first workspace folder. */
export function primaryWorkspaceFolder(): vscode.WorkspaceFolder | undefined {
    return getWorkspaceFolders()[0];
}

/** The settings for the server as VS Code has them now. */
export function getServerSettings(folder = primaryWorkspaceFolder()): ServerSettings {
    return resolveSettings(getConfiguration(SECTION, folder?.uri), isWorkspaceTrusted(), folder?.uri.fsPath);
}

/** Whether a configuration change needs a server restart. */
export function affectsServer(event: Pick<vscode.ConfigurationChangeEvent, 'affectsConfiguration'>): boolean {
    return event.affectsConfiguration(SECTION);
}

/**
 * The answer to one item of the server's `workspace/configuration` request:
 * `fullgraph` gives the whole settings object, `fullgraph.diagnostics.runtime`
 * one value, so the server sees the same values as in its initialization
 * options (trust included). Undefined for sections that are not ours.
 */
export function configurationFor(section: string | undefined, settings: ServerSettings): { ours: boolean; value?: unknown } {
    if (section !== SECTION && !section?.startsWith(`${SECTION}.`)) {
        return { ours: false };
    }
    let value: unknown = settings;
    for (const key of section.split('.').slice(1)) {
        value = (value as Record<string, unknown> | undefined)?.[key];
    }
    return { ours: true, value: value ?? null };
}
