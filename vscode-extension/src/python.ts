/**
 * Finds the Python interpreter that runs the language server, and checks that
 * fullgraph is installed there.
 *
 * Order: the `fullgraph.interpreter` setting, else the Python extension's
 * active environment (when that extension is installed), else `python3`
 * (`python` on Windows). The server runs in the user's own environment because
 * runtime analysis imports the user's code and their torch.
 */
import { execFile } from 'child_process';
import type * as vscode from 'vscode';
import { getPythonEnvironments } from './vscodeapi';

/** The module the server is started as: `<interpreter> -m fullgraph.lsp_server`. */
export const SERVER_MODULE = 'fullgraph.lsp_server';

/** What `Install fullgraph` runs, in a visible terminal, with the chosen interpreter. */
export const INSTALL_ARGS = ['-m', 'pip', 'install', 'fullgraph'];

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface Interpreter {
    /** The executable followed by any fixed arguments, e.g. ['/usr/bin/python3', '-X', 'utf8']. */
    command: string[];
    source: InterpreterSource;
}

export function defaultInterpreter(platform: NodeJS.Platform = process.platform): string[] {
    return [platform === 'win32' ? 'python' : 'python3'];
}

/** Pure choice between the three sources, in order of precedence. */
export function chooseInterpreter(
    setting: readonly string[],
    activeEnvironment: string | undefined,
    platform: NodeJS.Platform = process.platform,
): Interpreter {
    const fromSetting = setting.filter((part) => part.trim() !== '');
    if (fromSetting.length > 0) {
        return { command: fromSetting, source: 'setting' };
    }
    if (activeEnvironment) {
        return { command: [activeEnvironment], source: 'python-extension' };
    }
    return { command: defaultInterpreter(platform), source: 'default' };
}

/** The executable of the Python extension's active environment for `resource`, if any. */
export async function activeEnvironmentExecutable(resource?: vscode.Uri): Promise<string | undefined> {
    try {
        const environments = await getPythonEnvironments();
        if (!environments) {
            return undefined;
        }
        const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
        return resolved?.executable.uri?.fsPath;
    } catch {
        // A broken or still-loading Python extension must not stop fullgraph: fall back.
        return undefined;
    }
}

export async function findInterpreter(setting: readonly string[], resource?: vscode.Uri): Promise<Interpreter> {
    const active = setting.length > 0 ? undefined : await activeEnvironmentExecutable(resource);
    return chooseInterpreter(setting, active);
}

/** Calls `listener` when the Python extension's active environment changes. */
export async function onDidChangeActiveEnvironment(listener: () => unknown): Promise<vscode.Disposable | undefined> {
    try {
        const environments = await getPythonEnvironments();
        return environments?.onDidChangeActiveEnvironmentPath(() => listener());
    } catch {
        return undefined;
    }
}

/** Command and arguments that start the server over stdio. */
export function serverCommand(interpreter: Interpreter): { command: string; args: string[] } {
    const [command, ...fixed] = interpreter.command;
    return { command, args: [...fixed, '-m', SERVER_MODULE] };
}

export interface ImportCheck {
    ok: boolean;
    /** Why not, in words for the user (the interpreter's own error when it ran). */
    detail: string;
}

type ExecFile = (
    file: string,
    args: string[],
    options: { timeout: number },
    callback: (error: Error | null, stdout: string, stderr: string) => void,
) => unknown;

/**
 * Whether the server module can be found by the interpreter. Uses find_spec, so
 * nothing heavy (torch) is imported just to answer.
 */
export function checkServerImportable(interpreter: Interpreter, run: ExecFile = execFile): Promise<ImportCheck> {
    const [command, ...fixed] = interpreter.command;
    // find_spec raises (not returns None) when the parent package is missing.
    const probe = [
        'import importlib.util, sys',
        'try:',
        `    found = importlib.util.find_spec("${SERVER_MODULE}")`,
        'except ImportError:',
        '    found = None',
        'sys.exit(0 if found else 3)',
    ].join('\n');
    return new Promise((resolve) => {
        run(command, [...fixed, '-c', probe], { timeout: 30_000 }, (error, _stdout, stderr) => {
            if (!error) {
                resolve({ ok: true, detail: '' });
            } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
                resolve({ ok: false, detail: `interpreter not found: ${command}` });
            } else if ((error as { code?: unknown }).code === 3) {
                resolve({ ok: false, detail: `fullgraph is not installed in ${command}` });
            } else {
                resolve({ ok: false, detail: (stderr || error.message).trim() });
            }
        });
    });
}

/** Quotes one argument for a POSIX shell, or for PowerShell on Windows. */
function quoteForShell(arg: string, platform: NodeJS.Platform): string {
    const safe = platform === 'win32' ? /^[\w@%+=:,./\\-]+$/ : /^[\w@%+=:,./-]+$/;
    if (safe.test(arg)) {
        return arg;
    }
    return platform === 'win32' ? `"${arg.replace(/"/g, '`"')}"` : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The line typed into the install terminal, shown to the user before it runs. */
export function installCommandLine(interpreter: Interpreter, platform: NodeJS.Platform = process.platform): string {
    const line = [...interpreter.command, ...INSTALL_ARGS].map((arg) => quoteForShell(arg, platform)).join(' ');
    // PowerShell treats a quoted first word as a string, not a program: `&` runs it.
    return platform === 'win32' && line.startsWith('"') ? `& ${line}` : line;
}
