import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The core, the shared protocol and the webview run outside the extension host (plain Node, workers, the CLI,
// the browser): `vscode` must never be imported there.
export const noVscode = {
  'no-restricted-imports': [
    'error',
    {
      paths: [
        { name: 'vscode', message: 'src/core, src/shared and webview must not import vscode (they run outside the extension host).' },
      ],
    },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'out/**', '.vscode-test/**', 'test/fixtures/**/build/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware rules: a promise nobody awaits or handles loses its rejection (and its error message), and a
    // promise where a callback's return value is ignored (event handlers, array callbacks) runs unsupervised.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test tracks the promises its test()/describe()/it() return itself.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
      },
    },
  },
  { files: ['src/core/**/*.ts', 'src/shared/**/*.ts', 'webview/**/*.ts'], rules: noVscode },
  {
    // One-way arrows inside the core (docs/architecture.md): probes → index → dwarf → binary. The layers below the
    // compiler never import it (a loop there once existed only for a method a test used).
    files: ['src/core/index/**/*.ts', 'src/core/dwarf/**/*.ts', 'src/core/binary/**/*.ts', 'src/core/fetchargs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          ...noVscode['no-restricted-imports'][1],
          patterns: [
            {
              group: ['**/probes', '**/probes/*', '**/session', '**/session/*', '**/tracefs', '**/tracefs/*'],
              message:
                'the index, DWARF, ELF and fetch-argument layers must not import the compiler, sessions or tracefs (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
);
