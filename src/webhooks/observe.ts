/**
 * What telemetry hears of webhook deliveries: each attempt, reported by the worker after it is
 * settled. Nothing is reported (one size check per attempt) while nobody listens.
 */
export interface DeliveryEvent {
  webhookId: string
  messageId: string
  /** 1 for the first attempt. */
  attempt: number
  /** Where it went (the registered URL). */
  url: string
  /** When the attempt started (epoch ms) and how long it took. */
  startedAt: number
  durationMs: number
  responseStatus: number | undefined
  error: string | undefined
  /** `delivered`; `retrying` (another attempt is due); `returned` (given up: back on /notifications). */
  outcome: 'delivered' | 'retrying' | 'returned'
  /** The message delivered (JSON-RPC text). */
  body: string
}

const observers = new Set<(e: DeliveryEvent) => void>()

/** Listen to every delivery attempt in this process; returns how to stop. */
export function observeDeliveries(observer: (e: DeliveryEvent) => void): () => void {
  observers.add(observer)
  return () => void observers.delete(observer)
}

export function listening(): boolean {
  return observers.size > 0
}

/** Tell every observer; one that throws is not the delivery's problem (it is settled all the same). */
export function reportDelivery(e: DeliveryEvent): void {
  for (const o of observers) {
    try {
      o(e)
    } catch {}
  }
}
