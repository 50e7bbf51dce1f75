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

// Names from outside (functions, arguments, hosts, comm values, spec text) can be `__proto__` or `constructor`: an
// object literal used as a map (a type with a string index signature and no named members) keeps Object.prototype,
// whose members then read as entries and whose `__proto__` setter swallows one. Such maps are Maps, or records made
// by nameRecord() (src/shared/names.ts), which inherit nothing.
const nameRecords = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      plain:
        "{{what}} used as a map keeps Object.prototype ('constructor', '__proto__' read or written as members): use a Map or nameRecord() from src/shared/names.ts",
    },
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    if (!services?.program || !services.esTreeNodeToTSNodeMap) return {};
    const checker = services.program.getTypeChecker();
    const isMap = (type) => {
      if (!type) return false;
      if (type.isUnion()) return type.types.some(isMap);
      return checker.getIndexInfosOfType(type).some((i) => i.keyType.flags & 4 /* String */) && type.getProperties().length === 0;
    };
    const literalAsMap = (node) => {
      const ts = services.esTreeNodeToTSNodeMap.get(node);
      return isMap(checker.getContextualType(ts)) || isMap(checker.getTypeAtLocation(ts));
    };
    const isNameRecordArg = (node) =>
      node.parent?.type === 'CallExpression' && node.parent.callee.type === 'Identifier' && node.parent.callee.name === 'nameRecord';
    // `Object.entries(x ?? {})`: an empty fallback only listed, never read by a key.
    const isListedFallback = (node) =>
      node.properties.length === 0 &&
      node.parent?.type === 'LogicalExpression' &&
      node.parent.right === node &&
      node.parent.parent?.type === 'CallExpression' &&
      node.parent.parent.callee.type === 'MemberExpression' &&
      node.parent.parent.callee.object.name === 'Object' &&
      ['entries', 'keys', 'values'].includes(node.parent.parent.callee.property.name);
    return {
      ObjectExpression(node) {
        if (!isNameRecordArg(node) && !isListedFallback(node) && literalAsMap(node))
          context.report({ node, messageId: 'plain', data: { what: 'an object literal' } });
      },
      "CallExpression[callee.object.name='Object'][callee.property.name='fromEntries']"(node) {
        context.report({ node, messageId: 'plain', data: { what: 'Object.fromEntries' } });
      },
    };
  },
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
    files: ['src/**/*.ts', 'webview/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { probelens: { rules: { 'name-records': nameRecords } } },
    rules: { 'probelens/name-records': 'error' },
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
