/**
 * Entry point: activates on Python files and on fullgraph's commands, starts
 * the server with the right interpreter, restarts it when the settings, the
 * interpreter or workspace trust change, and registers the client-side commands.
 */
import type * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { FIX_ALL, FIX_ALL_ACTION_ARGS, RESTART } from './commands';
import {
    checkServerImportable,
    findInterpreter,
    Interpreter,
    installCommandLine,
    onDidChangeActiveEnvironment,
} from './python';
import { startServer, stopServer } from './server';
import { affectsServer, getServerSettings, primaryWorkspaceFolder } from './settings';
import { AnalysisStatus } from './status';
import {
    createOutputChannel,
    createTerminal,
    executeCommand,
    onDidChangeConfiguration,
    onDidGrantWorkspaceTrust,
    registerCommand,
    showErrorMessage,
    showWarningMessage,
} from './vscodeapi';

let client: LanguageClient | undefined;
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

async function restart(output: vscode.LogOutputChannel, status: AnalysisStatus): Promise<void> {
    await stopServer(client);
    client = undefined;
    const folder = primaryWorkspaceFolder();
    const settings = getServerSettings(folder);
    const interpreter = await findInterpreter(settings.interpreter, folder?.uri);
    const importable = await checkServerImportable(interpreter);
    if (!importable.ok) {
        output.warn(`Server not started: ${importable.detail}`);
        status.showMessage('$(warning) fullgraph: not installed', `${importable.detail}. Click to retry.`, RESTART);
        void offerInstall(interpreter, importable.detail);
        return;
    }
    status.showMessage('$(sync~spin) fullgraph: starting', 'Starting the fullgraph language server');
    try {
        client = await startServer({
            interpreter,
            settings,
            cwd: folder?.uri.fsPath,
            outputChannel: output,
            onAnalysisFinished: (result) => status.update(result),
        });
        status.showMessage(
            settings.diagnostics.runtime ? '$(graph) fullgraph' : '$(shield) fullgraph: static only',
            settings.diagnostics.runtime
                ? 'fullgraph: no analysis yet. Click to analyze.'
                : 'Runtime analysis is off (untrusted workspace or fullgraph.diagnostics.runtime).',
        );
    } catch (error) {
        output.error(`Server failed to start: ${(error as Error).message}`);
        status.showMessage('$(error) fullgraph: server failed', `${(error as Error).message}. Click to restart.`, RESTART);
        void showErrorMessage('fullgraph: the language server failed to start. See the "fullgraph" output.');
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
    await stopServer(client);
    client = undefined;
}
