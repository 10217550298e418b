import type { Outcome, Question } from './questions.js'

/** An answer as the asker sees it: elicitations keep their action; sampling and roots are accepted. */
export function toOutcome(q: Question<unknown>, response: Record<string, unknown>): Outcome<unknown> {
  switch (q.request.method) {
    case 'elicitation/create': {
      const action = response.action as Outcome<unknown>['action']
      if (action !== 'accept') return { action }
      const url = (q.request.params as { mode?: string }).mode === 'url'
      return { action, content: url ? true : (response.content ?? {}) }
    }
    case 'roots/list':
      return { action: 'accept', content: response.roots }
    default:
      return { action: 'accept', content: response }
  }
}
