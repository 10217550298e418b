import t from 'tap'
import { MemoryStore } from '../src/store/memory.js'
import { storeContract } from './store-contract.js'

// One process: "another instance" is the store itself.
storeContract(t, {
  create: async (limits) => new MemoryStore(limits),
  peer: async (store) => store
})
