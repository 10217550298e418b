import t from 'tap'
import { derive } from '../src/core/context.js'

t.test('derive: added members shadow, the rest is read from the base when asked for', async (t) => {
  let reads = 0
  class Base {
    readonly id = 'r-1'
    get lazy(): string {
      reads++
      return `lazy of ${this.id}`
    }
    describe(): string {
      return `${this.id} via ${(this as unknown as { name: string }).name}`
    }
  }
  const base = Object.assign(new Base(), { name: 'base' })
  const derived = derive(base, { name: 'derived', extra: 1 })
  t.equal(reads, 0, 'deriving reads nothing')
  t.equal(derived.id, 'r-1')
  t.equal(derived.lazy, 'lazy of r-1')
  t.equal(reads, 1)
  t.equal(derived.name, 'derived', 'an added member shadows the base')
  t.equal(derived.describe(), 'r-1 via derived', "the base's methods see the replacements")
  t.equal(base.name, 'base', 'the base is unchanged')
  t.ok('extra' in derived && 'id' in derived && 'lazy' in derived, 'in sees both')
  t.notOk('missing' in derived)
  t.same(Object.keys(derived), ['name', 'extra'], 'own keys are the added ones')
  const again = derive(derived, { extra: 2 })
  t.equal(again.extra, 2)
  t.equal(again.name, 'derived', 'derived twice: read through both')
})
