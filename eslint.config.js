// neostandard: the Fastify ecosystem's own rule set (standard: no semicolons, single quotes, two
// spaces, which this code already follows) with its TypeScript rules. One departure, the project's
// long-standing one: no space between a function's name and its parameters (`function f(a)`, as
// TypeScript's own style and most TypeScript code write it). Generated and fetched files are not linted.
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', '.tap/**', 'openapi/**', 'bench/results/**'] }),
  {
    // The console's page scripts run in the browser, as plain ES modules (no build step).
    files: ['console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: { document: 'readonly', window: 'readonly', sessionStorage: 'readonly', fetch: 'readonly', Headers: 'readonly', TextDecoderStream: 'readonly', btoa: 'readonly' }
    }
  },
  {
    rules: {
      '@stylistic/space-before-function-paren': ['error', { anonymous: 'always', named: 'never', asyncArrow: 'always' }],
      // `void x` marks a value discarded on purpose: a promise not awaited (a task runner), or an arrow
      // that returns nothing (`(n) => void seen.push(n)`); TypeScript checks the rest.
      'no-void': 'off',
      // A comma expression only where it is wrapped in its own parentheses, as an idiom, never by accident.
      'no-sequences': ['error', { allowInParentheses: true }],
      // It cannot see a condition changed by a callback or another async function, which is what
      // every loop of ours that it flags waits for.
      'no-unmodified-loop-condition': 'off'
    }
  }
]
