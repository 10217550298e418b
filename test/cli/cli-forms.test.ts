import t from 'tap'
import { Type } from '@sinclair/typebox'
import { elicit, listRoots } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { liveDemo } from '../helpers/client-harness.js'
import { run, tmux } from '../helpers/cli-run.js'

t.test('--arg values are typed by the tool input schema', async (t) => {
  const live = await liveDemo(t)
  live.mcp.tool(
    {
      name: 'typed',
      input: Type.Object({
        text: Type.String(),
        n: Type.Number(),
        maybe: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
        choice: Type.Unsafe<string>({ enum: ['1', '2'] }),
        anything: Type.Unsafe<unknown>({})
      })
    },
    (args) => JSON.stringify(args)
  )
  const url = ['--url', live.url]
  const echo = await run([...url, 'call', 'echo', '--arg', 'text=42'])
  t.same([echo.code, echo.stdout], [0, '42\n'], 'a string field keeps "42" as text')
  const typed = await run([...url, 'call', 'typed', '--arg', 'text=true', '--arg', 'n=42', '--arg', 'maybe=7', '--arg', 'choice=1', '--arg', 'anything=[1]', '--arg', 'extra=null'])
  t.same(JSON.parse(typed.stdout), { text: 'true', n: 42, maybe: '7', choice: '1', anything: [1], extra: null })
  const wrong = await run([...url, 'call', 'typed', '--arg', 'text=a', '--arg', 'n=many', '--arg', 'maybe=x', '--arg', 'choice=2', '--arg', 'anything=1'])
  t.equal(wrong.code, 1)
  t.match(wrong.stdout, /^Invalid arguments for tool typed: n must be number/, 'a number field given text: the server says why (an isError result)')
})

t.test('a read that needs roots suggests --roots', async (t) => {
  const live = await liveDemo(t)
  const roots = resolver({ name: 'roots', resolve: () => listRoots() })
  live.mcp.resource({ uri: 'x:roots', name: 'roots', resolvers: { roots } }, (_uri, ctx) => JSON.stringify(ctx.resolved.roots))
  const without = await run(['--url', live.url, 'read', 'x:roots'])
  t.equal(without.code, 1)
  t.match(without.stderr, /needs the client capabilities: roots/)
  t.match(without.stderr, /share them with --roots <uri,uri\.\.\.> \(e\.g\. --roots file:\/\/\/work\)\n$/)
  const shared = await run(['--url', live.url, '--roots', 'file:///work', 'read', 'x:roots'])
  t.same([shared.code, JSON.parse(shared.stdout)], [0, [{ uri: 'file:///work' }]])
  const other = await run(['--url', live.url, 'call', 'nope'])
  t.notMatch(other.stderr, /--roots/, 'only when roots are what is missing')
})

t.test('a form in a terminal: declined, cancelled, and each refusal says the rule', async (t) => {
  const live = await liveDemo(t)
  const signup = resolver({
    name: 'signup',
    resolve: () =>
      elicit(
        'Sign up',
        Type.Object({
          email: Type.String({ format: 'email' }),
          name: Type.String({ minLength: 2, maxLength: 5 }),
          age: Type.Integer({ minimum: 18, maximum: 130 }),
          code: Type.String({ pattern: '^[A-Z]{3}$' }),
          site: Type.String({ format: 'uri' }),
          day: Type.String({ format: 'date' }),
          at: Type.String({ format: 'date-time' }),
          agree: Type.Boolean()
        })
      )
  })
  live.mcp.tool({ name: 'signup', resolvers: { signup } }, (_a, ctx) => JSON.stringify(ctx.resolved.signup))
  const term = tmux(t)

  term.start('decline', `--url ${live.url} call get_weather`)
  await term.wait('decline', /:decline to refuse, :cancel or Ctrl-D to dismiss\)\n {2}location/)
  term.keys('decline', ':decline', 'Enter')
  t.match(await term.wait('decline', /EXIT=\d/), /The user chose to decline/)

  term.start('eof', `--url ${live.url} call get_weather`)
  await term.wait('eof', /^ {2}location/m)
  term.keys('eof', 'C-d')
  t.match(await term.wait('eof', /EXIT=\d/), /The user chose to cancel/)

  term.start('typed', `--url ${live.url} call get_weather`)
  await term.wait('typed', /^ {2}location/m)
  term.keys('typed', ':cancel', 'Enter')
  t.match(await term.wait('typed', /EXIT=\d/), /The user chose to cancel/)

  term.start('form', `--url ${live.url} call signup`)
  // [what is typed first (null: the last answer was already refused), the refusal, what is typed next]
  const steps: [string | null, RegExp, string][] = [
    ['', /email is required\./, 'email'],
    [null, /email must be an email address\./, 'ada@example.org'],
    ['A', /name must be at least 2 characters\./, 'Adaline'],
    [null, /name must be at most 5 characters\./, 'Ada'],
    ['17', /age must be at least 18\./, '200'],
    [null, /age must be at most 130\./, '36'],
    ['abc', /code must match \^\[A-Z\]\{3\}\$\./, 'ABC'],
    ['example.org', /site must be a URI \(scheme:\.\.\.\)\./, 'https://example.org'],
    ['tomorrow', /day must be a date \(YYYY-MM-DD\)\./, '2026-07-28'],
    ['soon', /at must be a date and time/, '2026-07-28T12:00:00Z'],
    ['perhaps', /agree answer y or n\./, 'no']
  ]
  for (const [bad, refusal, good] of steps) {
    if (bad !== null) {
      await term.wait('form', new RegExp(`^ {2}${refusal.source.split(' ')[0]}`, 'm'))
      term.keys('form', ...(bad === '' ? [] : [bad]), 'Enter')
    }
    t.match(await term.wait('form', refusal), refusal)
    term.keys('form', good, 'Enter')
  }
  const done = await term.wait('form', /EXIT=\d/)
  t.match(done, /"email":"ada@example\.org","name":"Ada","age":36,"code":"ABC",.*"agree":false/)
  t.match(done, /EXIT=0/)
})
