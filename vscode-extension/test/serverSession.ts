/**
 * One run of the real Python language server for the contract tests, spoken to
 * over stdio with vscode-jsonrpc (the library under vscode-languageclient) and
 * answering the server's requests the way the extension does.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { SERVER_MODULE } from '../src/python';
import { configurationFor, ServerSettings } from '../src/settings';
import { ANALYSIS_FINISHED, AnalysisFinished } from '../src/status';
import { extensionRoot, repositoryRoot } from './manifest';

export const FIXTURE = path.join(extensionRoot, 'test', 'fixtures', 'workspace');
export const STARTUP_MS = 60_000;

export interface Diagnostic {
    range: { start: { line: number; character: number }; end: { line: number; character: number } };
    code?: string | number;
    source?: string;
    message: string;
}

export function pythonExecutable(): string {
    return process.env.FULLGRAPH_PYTHON ?? path.join(repositoryRoot, '.venv', 'bin', 'python');
}

/** Why the server cannot be tested here, or undefined when it can. */
export function whyUnavailable(python: string): string | undefined {
    if (!process.env.FULLGRAPH_PYTHON && !fs.existsSync(python)) {
        return `no Python at ${python} (set FULLGRAPH_PYTHON)`;
    }
    const probe = spawnSync(python, ['-c', `import ${SERVER_MODULE}.__main__`], { encoding: 'utf8', timeout: 60_000 });
    if (probe.error) {
        return `cannot run ${python}: ${probe.error.message}`;
    }
    if (probe.status !== 0) {
        const lastLine = probe.stderr.trim().split('\n').pop();
        return `${SERVER_MODULE} is not importable with ${python} yet: ${lastLine || `exit ${probe.status}`}`;
    }
    return undefined;
}

/** Whether the refactors' static rules exist yet (without them the server has no static diagnostics). */
export function hasStaticRules(python: string): boolean {
    return spawnSync(python, ['-c', 'from fullgraph.refactors import lint_source'], { timeout: 60_000 }).status === 0;
}

/** What VS Code 1.82+ with vscode-languageclient 9 announces, less what these tests do not use. */
const CLIENT_CAPABILITIES = {
    general: { positionEncodings: ['utf-16'] },
    workspace: {
        configuration: true,
        applyEdit: true,
        workspaceEdit: { documentChanges: true, resourceOperations: ['create', 'rename', 'delete'] },
        executeCommand: { dynamicRegistration: true },
        didChangeConfiguration: { dynamicRegistration: true },
    },
    textDocument: {
        synchronization: { dynamicRegistration: true, didSave: true },
        publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true },
        codeAction: {
            codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix', 'source', 'source.fixAll'] } },
            resolveSupport: { properties: ['edit'] },
        },
        codeLens: {},
        hover: { contentFormat: ['markdown', 'plaintext'] },
    },
    window: { workDoneProgress: true, showMessage: {} },
};

export class ServerSession {
    readonly pushed = new Map<string, Diagnostic[]>();
    readonly finished: AnalysisFinished[] = [];
    readonly protocolErrors: string[] = [];
    readonly appliedEdits: unknown[] = [];
    stderr = '';
    initializeResult: any;
    private readonly listeners = new Set<() => void>();

    private constructor(
        readonly workspace: string,
        readonly process: ChildProcess,
        readonly connection: MessageConnection,
    ) {}

    /** file:// URI of a file of the session's workspace (a copy of the fixture). */
    uri(relative: string): string {
        return pathToFileURL(path.join(this.workspace, relative)).toString();
    }

    /**
     * Copies the fixture workspace, starts the server there and initializes it
     * with `settings` (computed for that folder) as VS Code would. Rejects when
     * it does not answer `initialize`.
     */
    static async start(python: string, settingsFor: (workspace: string) => ServerSettings): Promise<ServerSession> {
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'fullgraph-contract-'));
        fs.cpSync(FIXTURE, workspace, { recursive: true });
        const settings = settingsFor(workspace);
        const child = spawn(python, ['-m', SERVER_MODULE], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
        const connection = createMessageConnection(
            new StreamMessageReader(child.stdout!),
            new StreamMessageWriter(child.stdin!),
        );
        const session = new ServerSession(workspace, child, connection);
        child.stderr!.on('data', (chunk) => (session.stderr += chunk.toString()));
        connection.onError(([error]) => session.protocolErrors.push(error.message));
        connection.onNotification('textDocument/publishDiagnostics', (params: { uri: string; diagnostics: Diagnostic[] }) => {
            session.pushed.set(params.uri, params.diagnostics);
            session.wake();
        });
        connection.onNotification(ANALYSIS_FINISHED, (params: AnalysisFinished) => {
            session.finished.push(params);
            session.wake();
        });
        connection.onNotification(() => undefined); // $/progress, window/logMessage, window/showMessage
        // The extension's middleware answers with the same object as the initialization options.
        connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
            params.items.map((item) => configurationFor(item.section, settings).value ?? null),
        );
        connection.onRequest('workspace/applyEdit', (params: unknown) => {
            session.appliedEdits.push(params);
            return { applied: true };
        });
        connection.onRequest(() => null); // window/workDoneProgress/create, client/registerCapability, ...
        connection.listen();

        const initialize = connection.sendRequest('initialize', {
            processId: process.pid,
            clientInfo: { name: 'fullgraph contract test (vscode-jsonrpc)' },
            rootUri: pathToFileURL(workspace).toString(),
            workspaceFolders: [{ uri: pathToFileURL(workspace).toString(), name: 'workspace' }],
            initializationOptions: settings,
            capabilities: CLIENT_CAPABILITIES,
        });
        let timer: NodeJS.Timeout | undefined;
        const failed = new Promise((_, reject) => {
            child.once('exit', (code) => reject(new Error(`server exited with ${code} during initialize`)));
            child.once('error', reject);
            timer = setTimeout(() => reject(new Error(`no initialize answer in ${STARTUP_MS} ms`)), STARTUP_MS);
        });
        try {
            session.initializeResult = await Promise.race([initialize, failed]);
        } catch (error) {
            await session.stop();
            throw new Error(`${(error as Error).message}\n${session.stderr.slice(-2000)}`);
        } finally {
            clearTimeout(timer);
        }
        connection.sendNotification('initialized', {});
        return session;
    }

    /** Opens a file of the workspace in the server, as VS Code does for a visible editor. */
    open(relative: string): string {
        const uri = this.uri(relative);
        const text = fs.readFileSync(path.join(this.workspace, relative), 'utf8');
        this.connection.sendNotification('textDocument/didOpen', {
            textDocument: { uri, languageId: 'python', version: 1, text },
        });
        return uri;
    }

    /** The first value `check` returns as notifications arrive; rejects after `ms`. */
    waitFor<T>(what: string, ms: number, check: () => T | undefined): Promise<T> {
        return new Promise((resolve, reject) => {
            const attempt = () => {
                const value = check();
                if (value !== undefined) {
                    clearTimeout(timer);
                    this.listeners.delete(attempt);
                    resolve(value);
                }
            };
            const timer = setTimeout(() => {
                this.listeners.delete(attempt);
                reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
            }, ms);
            this.listeners.add(attempt);
            attempt();
        });
    }

    /** The document's diagnostics the way VS Code (a pull client) asks for them. */
    async pull(uri: string): Promise<Diagnostic[]> {
        const report = await this.connection.sendRequest<{ items?: Diagnostic[] }>('textDocument/diagnostic', {
            textDocument: { uri },
        });
        return report.items ?? [];
    }

    private wake(): void {
        this.listeners.forEach((listener) => listener());
    }

    /** shutdown + exit, as the client does on stop; then removes the workspace copy. */
    async stop(): Promise<void> {
        try {
            if (this.process.exitCode === null) {
                await this.connection.sendRequest('shutdown');
                this.connection.sendNotification('exit');
                await new Promise((resolve) => {
                    const timer = setTimeout(resolve, 5000);
                    this.process.once('exit', () => resolve(clearTimeout(timer)));
                });
            }
        } catch {
            // A server that already died cannot shut down; it is killed below.
        }
        this.connection.dispose();
        if (this.process.exitCode === null) {
            this.process.kill();
        }
        fs.rmSync(this.workspace, { recursive: true, force: true });
    }
}
