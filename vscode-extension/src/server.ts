/**
 * Starts and stops the language server: `<interpreter> -m fullgraph.lsp_server`
 * over stdio with vscode-languageclient.
 *
 * One server runs per workspace folder (multi-root: each folder is its own
 * project, with its own interpreter, pyproject.toml and entrypoints); its
 * document selector covers the files and Jupyter notebook cells under that
 * folder. A command id can be registered with VS Code only once, so only the
 * first folder's client registers the server's commands; `commandTarget`
 * sends each run to the server of the folder it is about (the active editor's).
 *
 * The middleware here is the only place the client adds behaviour to the
 * protocol: it answers `workspace/configuration` with the same settings the
 * server got at initialization, holds back saves while runtime analysis is
 * off, and routes the server's commands through
 * `runServerCommand` (commands.ts: palette arguments, workspace trust,
 * a cancellable progress notification).
 */
import type * as vscode from 'vscode';
import {
    CodeLensRequest,
    DocumentSelector,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions,
} from 'vscode-languageclient/node';
import { runServerCommand } from './commands';
import { Interpreter, serverCommand } from './python';
import { configurationFor, ServerSettings } from './settings';
import { ANALYSIS_FINISHED, AnalysisFinished } from './status';

export const SERVER_ID = 'fullgraph';
export const SERVER_NAME = 'fullgraph';

export interface ServerStart {
    interpreter: Interpreter;
    settings: ServerSettings;
    /** Where the server runs, so it finds the project's pyproject.toml. */
    cwd: string | undefined;
    outputChannel: vscode.LogOutputChannel;
    onAnalysisFinished: (result: AnalysisFinished) => void;
    /** The workspace folder this server serves; undefined: no folder open. */
    folder?: vscode.WorkspaceFolder;
    /** Whether this client registers the server's commands (the first folder's does). */
    registersCommands?: boolean;
    /** Also serve untitled Python documents (one server does: the first folder's). */
    servesUntitled?: boolean;
    /** The client a server command is sent to, for the document `uri` (default: this one). */
    commandTarget?: (uri: string | undefined) => LanguageClient | undefined;
}

/** The Jupyter notebook type VS Code gives `.ipynb` files. */
export const NOTEBOOK_TYPE = 'jupyter-notebook';

/**
 * Python files, and the Python cells of Jupyter notebooks (the server lints a
 * notebook's cells together: LSP notebook documents), under `folderPath` when given.
 */
export function documentSelector(folderPath: string | undefined, servesUntitled = true): DocumentSelector {
    if (folderPath === undefined) {
        return [
            { scheme: 'file', language: 'python' },
            { scheme: 'untitled', language: 'python' },
            { notebook: NOTEBOOK_TYPE, language: 'python' },
        ];
    }
    const pattern = `${folderPath.replace(/[\\/]+$/, '')}/**/*`;
    return [
        { scheme: 'file', language: 'python', pattern },
        ...(servesUntitled ? [{ scheme: 'untitled', language: 'python' }] : []),
        { notebook: { notebookType: NOTEBOOK_TYPE, pattern }, language: 'python' },
    ];
}

/** Whether `fsPath` is `folderPath` or lies under it (no folder: everything does). */
export function isUnder(fsPath: string, folderPath: string | undefined): boolean {
    if (folderPath === undefined) {
        return true;
    }
    const folder = folderPath.replace(/[\\/]+$/, '');
    return fsPath === folder || fsPath.startsWith(`${folder}/`) || fsPath.startsWith(`${folder}\\`);
}

export function clientOptions(start: ServerStart, getClient: () => LanguageClient): LanguageClientOptions {
    // The server's notebookDocumentSync selector names the notebook type only, so
    // vscode-languageclient would send every notebook to every folder's server:
    // each server is told only of the notebooks under its own folder.
    const mine = (notebook: vscode.NotebookDocument) => isUnder(notebook.uri.fsPath, start.folder?.uri.fsPath);
    return {
        documentSelector: documentSelector(start.folder?.uri.fsPath, start.servesUntitled ?? true),
        workspaceFolder: start.folder,
        outputChannel: start.outputChannel,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: start.settings,
        middleware: {
            // A save is what starts runtime analysis on the server. With runtime
            // analysis off (always so in an untrusted workspace) the server is not
            // told, so no user code runs whatever the server's own defaults are.
            didSave: (document, next) => (start.settings.diagnostics.runtime ? next(document) : Promise.resolve()),
            notebooks: {
                didOpen: (notebook, cells, next) => (mine(notebook) ? next(notebook, cells) : Promise.resolve()),
                didChange: (event, next) => (mine(event.notebook) ? next(event) : Promise.resolve()),
                didSave: (notebook, next) => (mine(notebook) ? next(notebook) : Promise.resolve()),
                didClose: (notebook, cells, next) => (mine(notebook) ? next(notebook, cells) : Promise.resolve()),
            },
            executeCommand: (command, args) =>
                runServerCommand(command, args, {
                    execute: (sentArgs, token) =>
                        (start.commandTarget?.(undefined) ?? getClient()).sendRequest(
                            ExecuteCommandRequest.type,
                            { command, arguments: sentArgs },
                            token,
                        ),
                    codeLenses: (uri) =>
                        (start.commandTarget?.(uri) ?? getClient()).sendRequest(CodeLensRequest.type, {
                            textDocument: { uri },
                        }),
                }),
            workspace: {
                configuration: async (params, token, next) => {
                    const fromVscode = await next(params, token);
                    return params.items.map((item, index) => {
                        const ours = configurationFor(item.section, start.settings);
                        return ours.ours ? ours.value : Array.isArray(fromVscode) ? fromVscode[index] : null;
                    });
                },
            },
        },
    };
}

/** Starts a client and its server; resolves once the server has answered `initialize`. */
export async function startServer(start: ServerStart): Promise<LanguageClient> {
    const { command, args } = serverCommand(start.interpreter);
    const serverOptions: ServerOptions = { command, args, options: { cwd: start.cwd } };
    start.outputChannel.info(`Starting server: ${[command, ...args].join(' ')} (interpreter from ${start.interpreter.source})`);
    start.outputChannel.info(`Settings: ${JSON.stringify(start.settings)}`);
    const client: LanguageClient = new LanguageClient(
        SERVER_ID,
        SERVER_NAME,
        serverOptions,
        clientOptions(start, () => client),
    );
    if (start.registersCommands === false) {
        // The first folder's client has registered fullgraph.analyze & co. with VS Code;
        // registering them again would fail this client's start.
        client.getFeature(ExecuteCommandRequest.method).initialize = () => undefined;
    }
    client.onNotification(ANALYSIS_FINISHED, (params: AnalysisFinished) => start.onAnalysisFinished(params));
    try {
        await client.start();
    } catch (error) {
        // Do not leave a half-started client (and its process) behind.
        await stopServer(client);
        throw error;
    }
    return client;
}

export async function stopServer(client: LanguageClient | undefined): Promise<void> {
    if (!client) {
        return;
    }
    try {
        // dispose() also unregisters the server's commands, so the next client can register them.
        await client.dispose(2000);
    } catch {
        // A server that already died cannot be asked to shut down; nothing left to do.
    }
}
