/**
 * The one module that touches the `vscode` API at run time.
 *
 * Every other module imports `vscode` for types only and calls these small
 * functions instead, so the unit tests can put a fake of this module in place
 * (see test/fakeVscodeApi.ts) and run under plain Node, where `vscode` does not
 * exist.
 */
import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';

export function getConfiguration(
    section: string,
    scope?: vscode.ConfigurationScope,
): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(section, scope);
}

export function onDidChangeConfiguration(
    listener: (e: vscode.ConfigurationChangeEvent) => unknown,
): vscode.Disposable {
    return vscode.workspace.onDidChangeConfiguration(listener);
}

export function getWorkspaceFolders(): readonly vscode.WorkspaceFolder[] {
    return vscode.workspace.workspaceFolders ?? [];
}

export function onDidChangeWorkspaceFolders(listener: () => unknown): vscode.Disposable {
    return vscode.workspace.onDidChangeWorkspaceFolders(listener);
}

/** Whether the Python extension (and its interpreter picker) is installed. */
export function hasPythonExtension(): boolean {
    return vscode.extensions.getExtension('ms-python.python') !== undefined;
}

export function isWorkspaceTrusted(): boolean {
    return vscode.workspace.isTrusted;
}

export function onDidGrantWorkspaceTrust(listener: () => unknown): vscode.Disposable {
    return vscode.workspace.onDidGrantWorkspaceTrust(listener);
}

export function registerCommand(
    command: string,
    callback: (...args: any[]) => unknown,
): vscode.Disposable {
    return vscode.commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...args: unknown[]): Thenable<T> {
    return vscode.commands.executeCommand<T>(command, ...args);
}

export function getActiveTextEditor(): vscode.TextEditor | undefined {
    return vscode.window.activeTextEditor;
}

export function createOutputChannel(name: string): vscode.LogOutputChannel {
    return vscode.window.createOutputChannel(name, { log: true });
}

export function createStatusBarItem(id: string, name: string): vscode.StatusBarItem {
    const item = vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Left);
    item.name = name;
    return item;
}

export function createTerminal(name: string): vscode.Terminal {
    return vscode.window.createTerminal({ name });
}

export function showInformationMessage(message: string, ...items: string[]): Thenable<string | undefined> {
    return vscode.window.showInformationMessage(message, ...items);
}

export function showWarningMessage(message: string, ...items: string[]): Thenable<string | undefined> {
    return vscode.window.showWarningMessage(message, ...items);
}

export function showErrorMessage(message: string, ...items: string[]): Thenable<string | undefined> {
    return vscode.window.showErrorMessage(message, ...items);
}

/** A cancellable progress notification (bottom-right toast) around `task`. */
export function withNotificationProgress<T>(
    title: string,
    task: (token: vscode.CancellationToken) => Thenable<T>,
): Thenable<T> {
    return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        (_progress, token) => task(token),
    );
}

/** The Python extension's environments API, or undefined when that extension is absent. */
export async function getPythonEnvironments(): Promise<PythonExtension['environments'] | undefined> {
    if (!vscode.extensions.getExtension('ms-python.python')) {
        return undefined;
    }
    const api = await PythonExtension.api();
    return api.environments;
}

/** Opens `content` in a new untitled editor, e.g. a generated wrapper module the server returned. */
export async function showUntitledDocument(content: string, language: string): Promise<void> {
    const document = await vscode.workspace.openTextDocument({ content, language });
    await vscode.window.showTextDocument(document);
}

/** Opens the document at `uri` (a file the server created through workspace/applyEdit). */
export async function showDocument(uri: string): Promise<void> {
    await vscode.window.showTextDocument(vscode.Uri.parse(uri));
}
