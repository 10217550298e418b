import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { alive, post, start } from '../helpers/gateway-cli-helper.js'
import { handWritten } from '../helpers/gateway-hostile.js'
import { until } from '../helpers/gateway-helper.js'

/**
 * A stdio upstream that says who it is: `pid` answers its process id and `$WHO`; `wait` answers
 * once the file named in its arguments exists (a call that stays in flight as long as the test
 * wants), and makes that name with `.$WHO` appended as it starts.
 */
const GATED = handWritten(
  'gated',
  ['pid', 'wait'],
  `
      if (m.method === 'tools/call' && m.params.name === 'pid') write({ jsonrpc: '2.0', id: m.id, result: text(process.pid + ' ' + process.env.WHO) })
      else if (m.method === 'tools/call') {
        writeFileSync(m.params.arguments.file + '.' + process.env.WHO, '')
        const timer = setInterval(() => {
          if (!existsSync(m.params.arguments.file)) return
          clearInterval(timer)
          write({ jsonrpc: '2.0', id: m.id, result: text('opened') })
        }, 50)
      }`,
  "const { existsSync, writeFileSync } = require('node:fs')"
)

const gated = (who: string) => ({ command: process.execPath, args: ['-e', GATED], env: { WHO: who } })

// The waits below allow a minute: children start and end on a machine shared with other test files.
interface Root {
  servers: { name: string; path?: string }[]
  virtualServers?: { name: string; servers: string[] }[]
  configuration: { loadedAt: string; reloadFailed?: { at: string; reason: string } }
}

t.test('gateway --config: reloaded on SIGHUP and on change, the servers that stay untouched', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-reload-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  const gate = join(dir, 'open')
  const write = (servers: Record<string, unknown>) => writeFileSync(config, JSON.stringify({ mcpServers: servers, virtualServers: { all: { include: ['*/pid'] } } }))
  write({ keep: gated('keep'), gone: gated('gone'), changed: gated('changed-1') })
  const gw = await start(t, ['gateway', '--config', config], { MCP_SHUTDOWN_GRACE_MS: '60000' })
  const root = async () => (await fetch(`${gw.base}/`).then((r) => r.json())) as Root
  const who = async (path: string) => {
    const answer = await post(`${gw.base}${path}`, { arguments: {} })
    return answer.status === 200 ? (answer.body.content[0].text as string) : `${answer.status}`
  }
  const pidOf = (text: string) => Number(text.split(' ')[0])
  const first = await root()
  t.same(first.servers.map((s) => s.name), ['keep', 'gone', 'changed'])
  const keep = await who('/keep/tools/pid/calls')
  const gone = await who('/gone/tools/pid/calls')
  const changed = await who('/changed/tools/pid/calls')
  t.match([keep, gone, changed], [/ keep$/, / gone$/, / changed-1$/])

  // Calls in flight through the reload: on a server that stays and on one that goes.
  const waitKeep = post(`${gw.base}/keep/tools/wait/calls`, { arguments: { file: gate } })
  const waitGone = post(`${gw.base}/gone/tools/wait/calls`, { arguments: { file: gate } })
  await until(() => existsSync(`${gate}.keep`) && existsSync(`${gate}.gone`), 'both calls reached their upstreams', 60)

  // A stream open on the app before the reload ends with it (its client opens the next on the new one).
  const listen = await fetch(`${gw.base}/keep/subscriptions/listen`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28' },
    body: JSON.stringify({ notifications: { toolsListChanged: true } })
  })
  t.equal(listen.status, 200)
  const listened = listen.text()

  write({ keep: gated('keep'), changed: gated('changed-2'), added: gated('added') })
  gw.child.kill('SIGHUP')
  await until(async () => (await root()).servers.some((s) => s.name === 'added'), 'the new configuration served', 60)
  const second = await root()
  t.same(second.servers.map((s) => s.name), ['keep', 'changed', 'added'], 'servers in the order of the new file')
  t.same(second.virtualServers?.[0]?.servers, ['keep', 'changed', 'added'], 'the virtual server picks from the new set')
  t.equal(await who('/keep/tools/pid/calls'), keep, 'the server that stays: the same child, untouched')
  t.match(await who('/changed/tools/pid/calls'), / changed-2$/, 'a changed entry: a new child with the new settings')
  t.match(await who('/added/tools/pid/calls'), / added$/, 'an added one serves')
  t.equal(await who('/gone/tools/pid/calls'), '404', 'a removed one is not served')
  const tools = (await fetch(`${gw.base}/all/tools`).then((r) => r.json())) as { tools: { name: string }[] }
  t.same(tools.tools.map((x) => x.name).sort(), ['added_pid', 'changed_pid', 'keep_pid'])
  t.type(await listened, 'string', 'the stream on the app before ended')
  t.ok(alive(pidOf(gone)), 'the removed server lives while calls that started before the reload are in flight (up to the shutdown grace)')
  t.ok(alive(pidOf(changed)), 'and so does the changed entry\'s old child')

  writeFileSync(gate, '')
  const [kept, ended] = await Promise.all([waitKeep, waitGone])
  t.same([kept.status, kept.body.content?.[0].text], [200, 'opened'], 'the call on the server that stays went through the reload')
  t.same([ended.status, ended.body.content?.[0].text], [200, 'opened'], 'and so did the one on the server that went')
  await until(() => !alive(pidOf(gone)), 'the removed server ended once the calls did', 60)
  await until(() => !alive(pidOf(changed)), 'the old child of the changed entry too', 60)

  // A file that cannot be served changes nothing, and says why.
  writeFileSync(config, '{ "mcpServers": ')
  gw.child.kill('SIGHUP')
  await until(async () => (await root()).configuration.reloadFailed !== undefined, 'the failed reload reported', 60)
  const failed = await root()
  t.match(failed.configuration.reloadFailed, { at: String, reason: /--config .*mcp\.json: .*JSON/ })
  t.same(failed.servers.map((s) => s.name), ['keep', 'changed', 'added'], 'the configuration before serves on')
  t.equal(await who('/keep/tools/pid/calls'), keep)
  t.match(gw.log(), /the configuration was not reloaded/)

  // A change of the file alone (no signal) is seen too.
  write({ keep: gated('keep') })
  await until(async () => (await root()).servers.length === 1, 'the file change served', 60)
  const third = await root()
  t.equal(third.configuration.reloadFailed, undefined, 'a reload that worked clears the failure')
  t.ok(Date.parse(third.configuration.loadedAt) >= Date.parse(failed.configuration.loadedAt))
  t.equal(await who('/keep/tools/pid/calls'), keep)
  t.equal(await who('/added/tools/pid/calls'), '404')
  t.match(gw.log(), /"removed":\["changed","added"\]/)

  // The same again: nothing starts or stops; and then the first server (whose store the round relay uses) goes.
  gw.child.kill('SIGHUP')
  await until(() => /"added":\[\],"removed":\[\],"changed":\[\]/.test(gw.log()), 'the same reloaded', 60)
  t.equal(await who('/keep/tools/pid/calls'), keep)
  t.match((await fetch(`${gw.base}/all/tools`).then((r) => r.json())) as unknown, { tools: [{ name: 'pid' }] }, 'the virtual server serves on')
  write({ other: gated('other') })
  await until(async () => (await root()).servers[0]!.name === 'other', 'the first server replaced', 60)
  t.match(await who('/other/tools/pid/calls'), / other$/)
  await until(() => !alive(pidOf(keep)), 'its child ended', 60)

  gw.child.kill('SIGTERM')
  await until(() => gw.child.exitCode !== null || gw.child.signalCode !== null, 'the gateway exited', 60)
  t.equal(gw.child.exitCode, 0)
})
