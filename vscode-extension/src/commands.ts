/**
 * The commands the extension contributes, and the arguments sent with the
 * server's commands when they are run from the command palette.
 *
 * `fullgraph.analyze`, `fullgraph.compileFunction` and `fullgraph.addEntrypoint`
 * are server commands (workspace/executeCommand): vscode-languageclient
 * registers them when the server advertises them. A code lens sends the
 * server's own arguments. From the palette there are none: "Analyze" then
 * means every configured entrypoint, and the two function commands take the
 * arguments of the server's "Compile this function" lens on the function at
 * the cursor — the client never works out for itself what a function is.
 */
import type * as vscode from 'vscode';
import {
    executeCommand,
    getActiveTextEditor,
    isWorkspaceTrusted,
    showDocument,
    showErrorMessage,
    showUntitledDocument,
    showWarningMessage,
    withNotificationProgress,
} from './vscodeapi';

export const ANALYZE = 'fullgraph.analyze';
export const COMPILE_FUNCTION = 'fullgraph.compileFunction';
export const ADD_ENTRYPOINT = 'fullgraph.addEntrypoint';
export const FIX_ALL = 'fullgraph.fixAll';
export const RESTART = 'fullgraph.restart';
export const SHOW_LOGS = 'fullgraph.showLogs';
export const SELECT_INTERPRETER = 'fullgraph.selectInterpreter';

/**
 * What "fullgraph: Select Interpreter" runs: the Python extension's picker when
 * it is installed and `fullgraph.interpreter` does not override it (the server
 * restarts when the active environment changes), else the setting itself.
 */
export function interpreterChoice(
    pythonExtension: boolean,
    interpreterSetting: readonly string[],
): { command: string; args: unknown[] } {
    if (pythonExtension && interpreterSetting.length === 0) {
        return { command: 'python.setInterpreter', args: [] };
    }
    return { command: 'workbench.action.openSettings', args: ['fullgraph.interpreter'] };
}

export const SERVER_COMMANDS = [ANALYZE, COMPILE_FUNCTION, ADD_ENTRYPOINT] as const;

/** Code action kind of the server's "fix all" action. */
export const FIX_ALL_KIND = 'source.fixAll.fullgraph';

/** Arguments for VS Code's `editor.action.codeAction`, applying the server's fix-all action. */
export const FIX_ALL_ACTION_ARGS = { kind: FIX_ALL_KIND, apply: 'first' } as const;

/** The cursor, in LSP coordinates (0-based line, UTF-16 character offset). */
export interface CursorLocation {
    uri: string;
    position: { line: number; character: number };
}

/** The part of an LSP CodeLens the palette commands read. */
export interface ServerLens {
    range: { start: { line: number } };
    command?: { command: string; arguments?: unknown[] };
}

/** Asks the server for the code lenses of an open document. */
export type LensSource = (uri: string) => Thenable<readonly ServerLens[] | null | undefined>;

/** An error whose message is for the user (shown as is, no stack). */
export class UserFacingError extends Error {}

export function cursorLocation(editor: vscode.TextEditor | undefined): CursorLocation | undefined {
    if (!editor || editor.document.languageId !== 'python') {
        return undefined;
    }
    const { line, character } = editor.selection.active;
    return { uri: editor.document.uri.toString(), position: { line, character } };
}

/**
 * The arguments of the server's "Compile this function" lens on the function
 * at `line`: the nearest lens that starts at or above it (lenses sit on the
 * `def`/`class` line). Undefined when there is none.
 */
export function lensArgumentsAt(lenses: readonly ServerLens[], line: number): unknown[] | undefined {
    let best: ServerLens | undefined;
    for (const lens of lenses) {
        if (lens.command?.command !== COMPILE_FUNCTION || lens.range.start.line > line) {
            continue;
        }
        if (!best || lens.range.start.line >= best.range.start.line) {
            best = lens;
        }
    }
    return best ? [...(best.command?.arguments ?? [])] : undefined;
}

/**
 * The arguments to send with a server command. Arguments given by the caller
 * (a code lens, another extension) are passed through untouched.
 */
export async function commandArguments(
    command: string,
    given: readonly unknown[],
    cursor: CursorLocation | undefined,
    lenses: LensSource,
): Promise<unknown[]> {
    if (given.length > 0) {
        return [...given];
    }
    if (command === ANALYZE) {
        // From the palette or the status bar: every configured entrypoint.
        return [];
    }
    const what = command === COMPILE_FUNCTION ? 'Compile this function' : 'Add entrypoint';
    if (!cursor) {
        throw new UserFacingError(`${what} needs a Python file open with the cursor inside a function.`);
    }
    const args = lensArgumentsAt((await lenses(cursor.uri)) ?? [], cursor.position.line);
    if (!args) {
        throw new UserFacingError(`${what}: no function or nn.Module class at the cursor.`);
    }
    return args;
}

/**
 * Commands that run the user's code (in the server's worker), so need a
 * trusted workspace. Add Entrypoint counts: the server analyses the new
 * entrypoint at once.
 */
export function runsUserCode(command: string): boolean {
    return (SERVER_COMMANDS as readonly string[]).includes(command);
}

/** Title of the progress notification shown while a server command runs. */
export function progressTitle(command: string, args: readonly unknown[]): string | undefined {
    if (!runsUserCode(command)) {
        return undefined;
    }
    const verb = command === COMPILE_FUNCTION ? 'Compiling' : 'Analyzing';
    const first = args[0] as { entry?: unknown; qualname?: unknown } | string | undefined;
    const name =
        typeof first === 'string' ? first : typeof first === 'object' ? (first.entry ?? first.qualname) : undefined;
    return `fullgraph: ${verb} ${typeof name === 'string' ? name : 'entrypoints'}…`;
}

/** JSON-RPC's "request cancelled" error code: the user pressed Cancel, nothing to report. */
const REQUEST_CANCELLED = -32800;

/** Asks for trust instead of running user code in a restricted workspace. */
async function requestTrust(): Promise<void> {
    const manage = 'Manage Workspace Trust';
    const choice = await showWarningMessage(
        'fullgraph runtime analysis runs your code. Trust this workspace to analyze or compile; ' +
            'static rules work without trust.',
        manage,
    );
    if (choice === manage) {
        await executeCommand('workbench.trust.manage');
    }
}

/** Shows the generated wrapper: the file the server created, else its source in a new editor. */
async function showCompiledWrapper(result: CompileResult | null): Promise<void> {
    if (result?.applied && result.uri) {
        await showDocument(result.uri);
    } else if (typeof result?.source === 'string' && result.source.length > 0) {
        await showUntitledDocument(result.source, 'python');
    }
}

/** What running a server command needs from the language client. */
export interface ServerConnection {
    /** Sends `workspace/executeCommand` with these arguments; cancelled through `token`. */
    execute(args: unknown[], token?: vscode.CancellationToken): Thenable<unknown>;
    codeLenses: LensSource;
}

/** What `fullgraph.compileFunction` answers (see lsp_server/server/features/commands.py). */
interface CompileResult {
    applied?: boolean;
    uri?: string;
    source?: string | null;
}

/**
 * Runs one server command the way the user expects from the palette: asks for
 * trust first when it runs user code, fills in the cursor, shows a cancellable
 * progress notification, and shows failures as messages instead of throwing.
 */
export async function runServerCommand(command: string, given: unknown[], server: ServerConnection): Promise<unknown> {
    if (runsUserCode(command) && !isWorkspaceTrusted()) {
        await requestTrust();
        return undefined;
    }
    let args: unknown[];
    try {
        args = await commandArguments(command, given, cursorLocation(getActiveTextEditor()), server.codeLenses);
    } catch (error) {
        if (error instanceof UserFacingError) {
            void showErrorMessage(error.message);
            return undefined;
        }
        throw error;
    }
    const title = progressTitle(command, args);
    try {
        const execute = (token?: vscode.CancellationToken) => server.execute(args, token);
        const result = await (title ? withNotificationProgress(title, execute) : execute());
        if (command === COMPILE_FUNCTION) {
            await showCompiledWrapper(result as CompileResult | null);
        }
        return result;
    } catch (error) {
        if ((error as { code?: unknown }).code === REQUEST_CANCELLED) {
            return undefined;
        }
        void showErrorMessage(`fullgraph: ${command} failed: ${(error as Error).message}`);
        return undefined;
    }
}
