/**
 * A stand-in for src/vscodeapi.ts so the extension's modules run under plain
 * Node. Importing this module puts the fake in Node's module cache under the
 * real module's path; import it before any module under test.
 *
 * The fake is typed as the real module, so the two cannot drift apart.
 */
import Module = require('module');
import type * as vscode from 'vscode';
import type * as real from '../src/vscodeapi';

type Layer = 'defaultValue' | 'globalValue' | 'workspaceValue' | 'workspaceFolderValue';

export interface FakeStatusBarItem {
    text: string;
    tooltip: string | undefined;
    command: string | undefined;
    visible: boolean;
    disposed: boolean;
}

/** Everything the fake records or answers with; tests set and read these fields. */
export const state = {
    /** settings by full key ("fullgraph.timeout"), per layer. */
    settings: {} as Record<string, Partial<Record<Layer, unknown>>>,
    trusted: true,
    workspaceFolders: [] as vscode.WorkspaceFolder[],
    activeEditor: undefined as vscode.TextEditor | undefined,
    pythonEnvironments: undefined as Awaited<ReturnType<typeof real.getPythonEnvironments>>,
    /** The button the next shown message "clicks" (undefined: dismissed). */
    messageChoice: undefined as string | undefined,
    messages: [] as { level: 'info' | 'warning' | 'error'; text: string; items: string[] }[],
    executed: [] as { command: string; args: unknown[] }[],
    commands: new Map<string, (...args: any[]) => unknown>(),
    statusItems: [] as FakeStatusBarItem[],
    progressTitles: [] as string[],
    untitledDocuments: [] as { content: string; language: string }[],
    shownDocuments: [] as string[],
    terminals: [] as { name: string; shown: boolean; sent: string[] }[],
    configurationListeners: [] as ((e: vscode.ConfigurationChangeEvent) => unknown)[],
    trustListeners: [] as (() => unknown)[],
    folderListeners: [] as (() => unknown)[],
    pythonExtension: false,
    /** How often the output channel was shown (fullgraph: Show Logs). */
    outputShown: 0,
};

export function reset(): void {
    state.settings = {};
    state.trusted = true;
    state.workspaceFolders = [];
    state.activeEditor = undefined;
    state.pythonEnvironments = undefined;
    state.messageChoice = undefined;
    state.messages = [];
    state.executed = [];
    state.commands.clear();
    state.statusItems = [];
    state.progressTitles = [];
    state.untitledDocuments = [];
    state.shownDocuments = [];
    state.terminals = [];
    state.configurationListeners = [];
    state.trustListeners = [];
    state.folderListeners = [];
    state.pythonExtension = false;
    state.outputShown = 0;
}

/** Sets a user (global) or workspace value, as a person would in settings.json. */
export function setSetting(key: string, value: unknown, layer: Layer = 'workspaceValue'): void {
    state.settings[key] = { ...state.settings[key], [layer]: value };
}

function fakeConfiguration(section: string): vscode.WorkspaceConfiguration {
    const layers = (key: string) => state.settings[`${section}.${key}`];
    const effective = (key: string) => {
        const l = layers(key);
        return l?.workspaceFolderValue ?? l?.workspaceValue ?? l?.globalValue ?? l?.defaultValue;
    };
    return {
        get: (key: string, defaultValue?: unknown) => effective(key) ?? defaultValue,
        has: (key: string) => effective(key) !== undefined,
        inspect: (key: string) => ({ key: `${section}.${key}`, ...layers(key) }),
        update: async () => undefined,
    } as unknown as vscode.WorkspaceConfiguration;
}

const disposable = (dispose: () => void = () => undefined): vscode.Disposable => ({ dispose }) as vscode.Disposable;

function showMessage(level: 'info' | 'warning' | 'error') {
    return async (text: string, ...items: string[]) => {
        state.messages.push({ level, text, items });
        return state.messageChoice;
    };
}

export const fake: typeof real = {
    getConfiguration: (section) => fakeConfiguration(section),
    onDidChangeConfiguration: (listener) => {
        state.configurationListeners.push(listener);
        return disposable();
    },
    getWorkspaceFolders: () => state.workspaceFolders,
    onDidChangeWorkspaceFolders: (listener) => {
        state.folderListeners.push(listener);
        return disposable();
    },
    hasPythonExtension: () => state.pythonExtension,
    isWorkspaceTrusted: () => state.trusted,
    onDidGrantWorkspaceTrust: (listener) => {
        state.trustListeners.push(listener);
        return disposable();
    },
    registerCommand: (command, callback) => {
        state.commands.set(command, callback);
        return disposable(() => state.commands.delete(command));
    },
    executeCommand: async <T>(command: string, ...args: unknown[]) => {
        state.executed.push({ command, args });
        return state.commands.get(command)?.(...args) as T;
    },
    getActiveTextEditor: () => state.activeEditor,
    createOutputChannel: () => {
        const log = () => undefined;
        const show = () => void (state.outputShown += 1);
        return { info: log, warn: log, error: log, dispose: log, show } as unknown as vscode.LogOutputChannel;
    },
    createStatusBarItem: () => {
        const item: FakeStatusBarItem = { text: '', tooltip: undefined, command: undefined, visible: false, disposed: false };
        state.statusItems.push(item);
        return Object.assign(item, {
            show: () => void (item.visible = true),
            hide: () => void (item.visible = false),
            dispose: () => void (item.disposed = true),
        }) as unknown as vscode.StatusBarItem;
    },
    createTerminal: (name) => {
        const terminal = { name, shown: false, sent: [] as string[] };
        state.terminals.push(terminal);
        return {
            show: () => void (terminal.shown = true),
            sendText: (text: string) => void terminal.sent.push(text),
        } as unknown as vscode.Terminal;
    },
    showInformationMessage: showMessage('info'),
    showWarningMessage: showMessage('warning'),
    showErrorMessage: showMessage('error'),
    withNotificationProgress: (title, task) => {
        state.progressTitles.push(title);
        return task({ isCancellationRequested: false, onCancellationRequested: () => disposable() } as never);
    },
    getPythonEnvironments: async () => state.pythonEnvironments,
    showUntitledDocument: async (content, language) => {
        state.untitledDocuments.push({ content, language });
    },
    showDocument: async (uri) => {
        state.shownDocuments.push(uri);
    },
};

// Put the fake where `require('./vscodeapi')` will find it.
const realPath = require.resolve('../src/vscodeapi');
const cached = new Module(realPath);
cached.filename = realPath;
cached.loaded = true;
cached.exports = fake;
require.cache[realPath] = cached;

/** A minimal text editor for the cursor-based commands. */
export function fakeEditor(uri: string, languageId: string, line: number, character: number): vscode.TextEditor {
    return {
        document: { uri: { toString: () => uri }, languageId },
        selection: { active: { line, character } },
    } as unknown as vscode.TextEditor;
}
