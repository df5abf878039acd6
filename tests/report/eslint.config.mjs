// eslint.config.mjs - ESLint's configuration for src/report/assets/report.js
// (tests/report/lint.sh runs it): the recommended rules plus the project's
// style (const/let, strict equality, braces where a body spans lines).
import js from '@eslint/js';

export default [
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: 'script',
      globals: { window: 'readonly', document: 'readonly', setTimeout: 'readonly' },
    },
    rules: {
      'no-var': 'error',
      'prefer-const': 'error',
      eqeqeq: 'error',
      strict: ['error', 'function'],
      curly: ['error', 'multi-line'],
      'no-implicit-globals': 'error',
      'no-shadow': 'error',
      'no-unused-vars': ['error', { args: 'after-used' }],
      'max-len': ['error', { code: 120 }],
    },
  },
];
