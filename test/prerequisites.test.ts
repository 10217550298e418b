import t from 'tap'
import { prerequisite } from './prerequisites.js'

t.test('a missing program fails with one line that names the package to install', async (t) => {
  const path = process.env.PATH
  t.teardown(() => void (process.env.PATH = path))
  t.match(prerequisite('tmux'), /\/tmux$/, 'found on this machine')
  // Nothing on PATH: tmux lives in /usr/bin, so it is missing now (the /usr/sbin fallback is for nginx and redis-server).
  process.env.PATH = '/nonexistent'
  t.throws(() => prerequisite('tmux'), { message: 'tmux is not installed: these tests need a real tmux. Install it with: apt-get update && apt-get install -y tmux' })
})
