// Bundles the extension and its runtime dependencies (vscode-languageclient,
// @vscode/python-extension) into dist/extension.js, so the .vsix ships one
// file and no node_modules (`vsce package --no-dependencies`).
import * as esbuild from 'esbuild';

await esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    external: ['vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node18',
    minify: true,
    sourcemap: false,
    logLevel: 'info',
});
