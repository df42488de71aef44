/**
 * The status bar item that shows the last analysis: graphs and breaks of the
 * entrypoint the server analysed last, from its `fullgraph/analysisFinished`
 * notification.
 */
import type * as vscode from 'vscode';
import { createStatusBarItem } from './vscodeapi';

export const ANALYSIS_FINISHED = 'fullgraph/analysisFinished';

/** Params of the server's `fullgraph/analysisFinished` notification. */
export interface AnalysisFinished {
    entry: string;
    graphs: number;
    breaks: number;
    /** "ok" | "user_exception" | "timeout" | "crashed" | "cancelled" | "config_error" */
    status: string;
}

function plural(count: number, noun: string): string {
    return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Short text for the status bar, with a codicon saying at a glance whether it is one graph. */
export function statusText(result: AnalysisFinished): string {
    switch (result.status) {
        case 'ok': {
            const icon = result.breaks === 0 && result.graphs <= 1 ? '$(pass)' : '$(warning)';
            return `${icon} fullgraph: ${plural(result.graphs, 'graph')} / ${plural(result.breaks, 'break')}`;
        }
        case 'user_exception':
            return '$(error) fullgraph: program raised';
        case 'timeout':
            return '$(watch) fullgraph: timed out';
        case 'crashed':
            return '$(error) fullgraph: analysis crashed';
        case 'cancelled':
            return '$(circle-slash) fullgraph: cancelled';
        case 'config_error':
            return '$(gear) fullgraph: configuration error';
        default:
            return `$(question) fullgraph: ${result.status}`;
    }
}

/** Hover text: which entrypoint, and what to do next. */
export function statusTooltip(result: AnalysisFinished): string {
    const summary =
        result.status === 'ok'
            ? `${plural(result.graphs, 'graph')}, ${plural(result.breaks, 'graph break')}`
            : `status: ${result.status}`;
    return `fullgraph: last analysis of ${result.entry}\n${summary}\nClick to analyze again.`;
}

export const IDLE_TEXT = '$(graph) fullgraph';

/** Owns the status bar item; clicking it runs the analysis again. */
export class AnalysisStatus implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;

    constructor() {
        this.item = createStatusBarItem('fullgraph.status', 'fullgraph analysis');
        this.item.text = IDLE_TEXT;
        this.item.tooltip = 'fullgraph: no analysis yet. Click to analyze.';
        this.item.command = 'fullgraph.analyze';
        this.item.show();
    }

    update(result: AnalysisFinished): void {
        this.item.text = statusText(result);
        this.item.tooltip = statusTooltip(result);
        this.item.command = 'fullgraph.analyze';
    }

    /**
     * A short message in place of the last result, e.g. while the server
     * starts; clicking runs `command` (restart, when there is no server to analyze with).
     */
    showMessage(text: string, tooltip: string, command = 'fullgraph.analyze'): void {
        this.item.text = text;
        this.item.tooltip = tooltip;
        this.item.command = command;
    }

    dispose(): void {
        this.item.dispose();
    }
}
