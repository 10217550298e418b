import t from 'tap'
import { MemoryStore } from '../src/store/memory.js'
import { storeContract } from './store-contract.js'

// One process: "another instance" is the store itself.
storeContract(t, {
  create: async (limits) => new MemoryStore(limits),
  peer: async (store) => store
})

t.test('tasks: a read is one frozen copy per version, shared until the task changes', async (t) => {
  const store = new MemoryStore()
  const now = new Date().toISOString()
  const task = { taskId: 't1', status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, inputRequests: { k: { method: 'roots/list' } } }
  await store.createTask('alice', task)
  const first = (await store.getTask('alice', 't1'))!
  t.equal(await store.getTask('alice', 't1'), first, 'the same view for every read')
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.inputRequests) && Object.isFrozen(first.inputRequests!.k), 'frozen all the way down')
  t.not(first, task, 'never the caller’s own object')
  t.same(await store.answerTask('alice', 't1', { k: { roots: [] } }), ['k'])
  const answered = (await store.getTask('alice', 't1'))!
  t.not(answered, first, 'an answer makes a new view')
  t.equal(answered.inputRequests, undefined)
  t.same(first.inputRequests, { k: { method: 'roots/list' } }, 'an old view stays as it was')
  await store.updateTask('alice', 't1', { status: 'completed', result: { content: [] } })
  t.equal((await store.getTask('alice', 't1'))!.status, 'completed', 'an update makes a new view')
})
