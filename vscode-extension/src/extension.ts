/**
 * Entry point: activates on Python files, Jupyter notebooks and fullgraph's
 * commands, starts one server per workspace folder with that folder's
 * interpreter and settings, restarts them when the settings, the interpreter,
 * the folders or workspace trust change, and registers the client-side commands.
 */
import type * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
    FIX_ALL,
    FIX_ALL_ACTION_ARGS,
    interpreterChoice,
    RESTART,
    SELECT_INTERPRETER,
    SHOW_LOGS,
} from './commands';
import {
    checkServerImportable,
    findInterpreter,
    Interpreter,
    installCommandLine,
    onDidChangeActiveEnvironment,
} from './python';
import { startServer, stopServer } from './server';
import { affectsServer, getServerSettings } from './settings';
import { AnalysisStatus } from './status';
import {
    createOutputChannel,
    createTerminal,
    executeCommand,
    getActiveTextEditor,
    getWorkspaceFolders,
    hasPythonExtension,
    onDidChangeConfiguration,
    onDidChangeWorkspaceFolders,
    onDidGrantWorkspaceTrust,
    registerCommand,
    showErrorMessage,
    showWarningMessage,
} from './vscodeapi';

/** One client per workspace folder (key: the folder's URI; '' with no folder open). */
const clients = new Map<string, LanguageClient>();
/** Restarts run one after another: a second request waits for the first to finish. */
let restartQueue: Promise<void> = Promise.resolve();

/** Offers to install fullgraph into `interpreter`; never installs without the user's click. */
async function offerInstall(interpreter: Interpreter, detail: string): Promise<void> {
    const install = 'Install fullgraph';
    const choose = 'Choose Interpreter';
    const choice = await showWarningMessage(
        `fullgraph: cannot start the language server (${detail}). ` +
            `Install fullgraph into ${interpreter.command[0]}, or set "fullgraph.interpreter".`,
        install,
        choose,
    );
    if (choice === install) {
        const terminal = createTerminal('fullgraph: install');
        terminal.show();
        terminal.sendText(installCommandLine(interpreter));
        void showWarningMessage('Run "fullgraph: Restart Server" when the installation has finished.');
    } else if (choice === choose) {
        await executeCommand('workbench.action.openSettings', 'fullgraph.interpreter');
    }
}

/** The folder (of `folders`, by URI) that holds `uri`: the innermost one, else undefined. */
export function folderKeyFor(uri: string | undefined, folders: readonly string[]): string | undefined {
    if (!uri) {
        return undefined;
    }
    // A notebook cell's URI has the notebook's path under another scheme.
    const asFile = uri.replace(/^vscode-notebook-cell:(\/\/)?/, 'file://').replace(/#.*$/, '');
    const inside = folders.filter((folder) => asFile === folder || asFile.startsWith(folder.replace(/\/?$/, '/')));
    return inside.sort((a, b) => b.length - a.length)[0];
}

/** The client of the folder holding `uri` (else the active editor's document), else the first. */
function commandTarget(uri: string | undefined): LanguageClient | undefined {
    const target = uri ?? getActiveTextEditor()?.document.uri.toString();
    const key = folderKeyFor(target, [...clients.keys()]);
    return (key !== undefined ? clients.get(key) : undefined) ?? clients.values().next().value;
}

async function stopAll(): Promise<void> {
    const running = [...clients.values()];
    clients.clear();
    await Promise.all(running.map((client) => stopServer(client)));
}

async function startFolder(
    folder: vscode.WorkspaceFolder | undefined,
    first: boolean,
    output: vscode.LogOutputChannel,
    status: AnalysisStatus,
): Promise<void> {
    const where = folder ? ` for ${folder.name}` : '';
    const settings = getServerSettings(folder);
    const interpreter = await findInterpreter(settings.interpreter, folder?.uri);
    const importable = await checkServerImportable(interpreter);
    if (!importable.ok) {
        output.warn(`Server${where} not started: ${importable.detail}`);
        status.showMessage('$(warning) fullgraph: not installed', `${importable.detail}. Click to retry.`, RESTART);
        void offerInstall(interpreter, importable.detail);
        return;
    }
    status.showMessage('$(sync~spin) fullgraph: starting', 'Starting the fullgraph language server');
    try {
        const client = await startServer({
            interpreter,
            settings,
            cwd: folder?.uri.fsPath,
            outputChannel: output,
            onAnalysisFinished: (result) => status.update(result),
            folder,
            registersCommands: first,
            servesUntitled: first,
            commandTarget,
        });
        clients.set(folder?.uri.toString() ?? '', client);
        status.showMessage(
            settings.diagnostics.runtime ? '$(graph) fullgraph' : '$(shield) fullgraph: static only',
            settings.diagnostics.runtime
                ? 'fullgraph: no analysis yet. Click to analyze.'
                : 'Runtime analysis is off (untrusted workspace or fullgraph.diagnostics.runtime).',
        );
    } catch (error) {
        output.error(`Server${where} failed to start: ${(error as Error).message}`);
        status.showMessage('$(error) fullgraph: server failed', `${(error as Error).message}. Click to restart.`, RESTART);
        void showErrorMessage('fullgraph: the language server failed to start. See the "fullgraph" output.');
    }
}

/** Stops every server, then starts one per workspace folder (one in all with no folder open). */
async function restart(output: vscode.LogOutputChannel, status: AnalysisStatus): Promise<void> {
    await stopAll();
    const folders = getWorkspaceFolders();
    const targets: (vscode.WorkspaceFolder | undefined)[] = folders.length > 0 ? [...folders] : [undefined];
    // One after another: the first registers the server's commands before the others start.
    for (const [index, folder] of targets.entries()) {
        await startFolder(folder, index === 0, output, status);
    }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const output = createOutputChannel('fullgraph');
    const status = new AnalysisStatus();
    context.subscriptions.push(output, status);

    const scheduleRestart = (reason: string): Promise<void> => {
        output.info(`Restarting server: ${reason}`);
        restartQueue = restartQueue.then(() => restart(output, status));
        return restartQueue;
    };

    context.subscriptions.push(
        registerCommand(RESTART, () => scheduleRestart('restart command')),
        registerCommand(FIX_ALL, () => executeCommand('editor.action.codeAction', FIX_ALL_ACTION_ARGS)),
        registerCommand(SHOW_LOGS, () => output.show(true)),
        registerCommand(SELECT_INTERPRETER, () => {
            const choice = interpreterChoice(hasPythonExtension(), getServerSettings().interpreter);
            return executeCommand(choice.command, ...choice.args);
        }),
        onDidChangeWorkspaceFolders(() => scheduleRestart('workspace folders changed')),
        onDidChangeConfiguration((event) => {
            if (affectsServer(event)) {
                void scheduleRestart('settings changed');
            }
        }),
        onDidGrantWorkspaceTrust(() => scheduleRestart('workspace trusted: runtime analysis enabled')),
    );
    const environmentWatch = await onDidChangeActiveEnvironment(() => {
        if (getServerSettings().interpreter.length === 0) {
            void scheduleRestart('Python interpreter changed');
        }
    });
    if (environmentWatch) {
        context.subscriptions.push(environmentWatch);
    }

    // Awaited so the server's commands are registered before VS Code runs the
    // command that activated the extension.
    await scheduleRestart('activation');
}

export async function deactivate(): Promise<void> {
    await stopAll();
}
