import { randomUUID } from 'node:crypto'
import type { ClaimedDelivery, DeliveryAttempt, PendingDelivery, PendingLimits, WebhookRecord, WebhookStore } from './types.js'

interface Slot {
  delivery: PendingDelivery
  dueAt: number
  lease?: string
}

interface Hook {
  record: WebhookRecord
  pending: Map<string, Slot>
  bytes: number
  attempts: DeliveryAttempt[]
}

/** The {@link WebhookStore} of one process: the default, as the MemoryStore is. */
export class MemoryWebhookStore implements WebhookStore {
  readonly #owners = new Map<string, Map<string, Hook>>()
  readonly #hooks = new Map<string, Hook>()

  async addWebhook(hook: WebhookRecord, max: number): Promise<boolean> {
    const mine = this.#owners.get(hook.owner) ?? new Map<string, Hook>()
    if (mine.size >= max) return false
    const entry: Hook = { record: structuredClone(hook), pending: new Map(), bytes: 0, attempts: [] }
    mine.set(hook.id, entry)
    this.#owners.set(hook.owner, mine)
    this.#hooks.set(hook.id, entry)
    return true
  }

  async webhooks(owner: string): Promise<WebhookRecord[]> {
    return [...(this.#owners.get(owner)?.values() ?? [])].map((h) => structuredClone(h.record))
  }

  async owners(): Promise<string[]> {
    return [...this.#owners.keys()]
  }

  async webhook(owner: string, id: string): Promise<WebhookRecord | undefined> {
    const h = this.#owners.get(owner)?.get(id)
    return h === undefined ? undefined : structuredClone(h.record)
  }

  async removeWebhook(owner: string, id: string): Promise<PendingDelivery[] | undefined> {
    const mine = this.#owners.get(owner)
    const h = mine?.get(id)
    if (h === undefined) return undefined
    mine!.delete(id)
    if (mine!.size === 0) this.#owners.delete(owner)
    this.#hooks.delete(id)
    return [...h.pending.values()].map((s) => s.delivery)
  }

  async settle(owner: string, id: string, ok: boolean, disableAfter: number, reason: string): Promise<WebhookRecord | undefined> {
    const h = this.#owners.get(owner)?.get(id)
    if (h === undefined) return undefined
    const r = h.record
    r.consecutiveFailures = ok ? 0 : r.consecutiveFailures + 1
    if (!ok && r.status === 'active' && r.consecutiveFailures >= disableAfter) {
      r.status = 'disabled'
      r.disabledReason = reason
      r.disabledAt = new Date().toISOString()
    }
    return structuredClone(r)
  }

  async enqueue(delivery: PendingDelivery, limits: PendingLimits): Promise<boolean> {
    const h = this.#hooks.get(delivery.webhookId)
    if (h === undefined) return false
    const size = Buffer.byteLength(delivery.body)
    if (h.pending.size >= limits.maxPending || h.bytes + size > limits.maxPendingBytes) return false
    h.pending.set(delivery.id, { delivery: { ...delivery }, dueAt: delivery.createdAt })
    h.bytes += size
    return true
  }

  async claim(now: number, leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    const out: ClaimedDelivery[] = []
    for (const h of this.#hooks.values()) {
      for (const slot of h.pending.values()) {
        if (out.length >= max) return out
        if (slot.dueAt > now) continue
        slot.lease = randomUUID()
        slot.dueAt = now + leaseMs
        out.push({ ...slot.delivery, lease: slot.lease })
      }
    }
    return out
  }

  #leased(d: ClaimedDelivery): [Hook, Slot] | undefined {
    const h = this.#hooks.get(d.webhookId)
    const slot = h?.pending.get(d.id)
    return slot === undefined || slot.lease !== d.lease ? undefined : [h!, slot]
  }

  async retry(d: ClaimedDelivery, dueAt: number): Promise<boolean> {
    const found = this.#leased(d)
    if (found === undefined) return false
    const [, slot] = found
    delete slot.lease
    slot.dueAt = dueAt
    slot.delivery.attempts = d.attempts
    return true
  }

  async finish(d: ClaimedDelivery): Promise<boolean> {
    const found = this.#leased(d)
    if (found === undefined) return false
    const [h] = found
    h.pending.delete(d.id)
    h.bytes -= Buffer.byteLength(d.body)
    return true
  }

  async drain(webhookId: string): Promise<PendingDelivery[]> {
    const h = this.#hooks.get(webhookId)
    if (h === undefined) return []
    const out = [...h.pending.values()].map((s) => s.delivery)
    h.pending.clear()
    h.bytes = 0
    return out
  }

  async logAttempt(webhookId: string, attempt: DeliveryAttempt, keep: number): Promise<void> {
    const h = this.#hooks.get(webhookId)
    if (h === undefined) return
    h.attempts.unshift(attempt)
    h.attempts.length = Math.min(h.attempts.length, keep)
  }

  async attempts(webhookId: string): Promise<DeliveryAttempt[]> {
    return [...(this.#hooks.get(webhookId)?.attempts ?? [])]
  }

  async close(): Promise<void> {}
}
