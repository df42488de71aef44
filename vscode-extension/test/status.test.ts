// First: replaces src/vscodeapi before the modules under test load it.
import { reset, state } from './fakeVscodeApi';
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { AnalysisStatus, IDLE_TEXT, statusText, statusTooltip } from '../src/status';

const result = (status: string, graphs = 0, breaks = 0) => ({ entry: 'examples/mlp.py:main', graphs, breaks, status });

describe('status text', () => {
    it('shows one graph with no breaks as a pass', () => {
        assert.equal(statusText(result('ok', 1, 0)), '$(pass) fullgraph: 1 graph / 0 breaks');
    });

    it('warns when there are breaks', () => {
        assert.equal(statusText(result('ok', 3, 2)), '$(warning) fullgraph: 3 graphs / 2 breaks');
        assert.equal(statusText(result('ok', 2, 1)), '$(warning) fullgraph: 2 graphs / 1 break');
    });

    it('names failed analyses instead of counting', () => {
        assert.equal(statusText(result('user_exception')), '$(error) fullgraph: program raised');
        assert.equal(statusText(result('timeout')), '$(watch) fullgraph: timed out');
        assert.equal(statusText(result('crashed')), '$(error) fullgraph: analysis crashed');
        assert.equal(statusText(result('cancelled')), '$(circle-slash) fullgraph: cancelled');
        assert.equal(statusText(result('config_error')), '$(gear) fullgraph: configuration error');
        assert.equal(statusText(result('something_new')), '$(question) fullgraph: something_new');
    });

    it('names the entrypoint in the tooltip', () => {
        assert.equal(
            statusTooltip(result('ok', 3, 2)),
            'fullgraph: last analysis of examples/mlp.py:main\n3 graphs, 2 graph breaks\nClick to analyze again.',
        );
        assert.match(statusTooltip(result('timeout')), /status: timeout/);
    });
});

describe('status bar item', () => {
    beforeEach(reset);

    it('starts idle, runs analyze on click, and shows the last analysis', () => {
        const status = new AnalysisStatus();
        const [item] = state.statusItems;
        assert.equal(item.text, IDLE_TEXT);
        assert.equal(item.command, 'fullgraph.analyze');
        assert.equal(item.visible, true);
        status.showMessage('$(warning) fullgraph: not installed', 'why', 'fullgraph.restart');
        assert.equal(item.command, 'fullgraph.restart');
        status.update(result('ok', 1, 0));
        assert.equal(item.text, '$(pass) fullgraph: 1 graph / 0 breaks');
        assert.equal(item.command, 'fullgraph.analyze');
        status.dispose();
        assert.equal(item.disposed, true);
    });
});
