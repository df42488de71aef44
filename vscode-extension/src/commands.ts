/**
 * The commands the extension contributes, and the arguments sent with the
 * server's commands when they are run from the command palette.
 *
 * `fullgraph.analyze`, `fullgraph.compileFunction` and `fullgraph.addEntrypoint`
 * are server commands (workspace/executeCommand): vscode-languageclient
 * registers them when the server advertises them. A code lens sends the
 * server's own arguments; from the palette there are none, so the client sends
 * where the cursor is and the server decides which function that means.
 */
import type * as vscode from 'vscode';
import {
    executeCommand,
    getActiveTextEditor,
    isWorkspaceTrusted,
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

/** What the palette version of a server command sends: `[{uri, position}]`. */
export type CommandArgument = CursorLocation;

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
 * The arguments to send with a server command. Arguments given by the caller
 * (a code lens, another extension) are passed through untouched.
 */
export function commandArguments(command: string, given: readonly unknown[], cursor: CursorLocation | undefined): unknown[] {
    if (given.length > 0) {
        return [...given];
    }
    if (cursor) {
        return [cursor];
    }
    if (command === ANALYZE) {
        // No editor: the server analyses the configured entrypoints.
        return [];
    }
    throw new UserFacingError(
        `${command === COMPILE_FUNCTION ? 'Compile this function' : 'Add entrypoint'} needs a Python file ` +
            'open with the cursor inside a function.',
    );
}

/** Commands that run the user's code (in the server's worker), so need a trusted workspace. */
export function runsUserCode(command: string): boolean {
    return command === ANALYZE || command === COMPILE_FUNCTION;
}

/** Title of the progress notification shown while a server command runs. */
export function progressTitle(command: string, args: readonly unknown[]): string | undefined {
    if (!runsUserCode(command)) {
        return undefined;
    }
    const verb = command === ANALYZE ? 'Analyzing' : 'Compiling';
    const first = args[0] as Partial<CursorLocation> | string | undefined;
    const target =
        typeof first === 'string'
            ? first
            : first?.uri
              ? decodeURIComponent(first.uri.split('/').pop() ?? first.uri)
              : 'entrypoints';
    return `fullgraph: ${verb} ${target}…`;
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

/** Sends `workspace/executeCommand` with these arguments; cancelled through `token`. */
export type SendCommand = (args: unknown[], token?: vscode.CancellationToken) => Thenable<unknown>;

/**
 * Runs one server command the way the user expects from the palette: asks for
 * trust first when it runs user code, fills in the cursor, shows a cancellable
 * progress notification, and shows failures as messages instead of throwing.
 */
export async function runServerCommand(command: string, given: unknown[], send: SendCommand): Promise<unknown> {
    if (runsUserCode(command) && !isWorkspaceTrusted()) {
        await requestTrust();
        return undefined;
    }
    let args: unknown[];
    try {
        args = commandArguments(command, given, cursorLocation(getActiveTextEditor()));
    } catch (error) {
        if (error instanceof UserFacingError) {
            void showErrorMessage(error.message);
            return undefined;
        }
        throw error;
    }
    const title = progressTitle(command, args);
    try {
        const result = await (title ? withNotificationProgress(title, (token) => send(args, token)) : send(args));
        if (command === COMPILE_FUNCTION && typeof result === 'string' && result.length > 0) {
            // A server that could not create the wrapper file returns its source instead.
            await showUntitledDocument(result, 'python');
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
