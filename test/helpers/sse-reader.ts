/**
 * Read a Server-Sent Events body: `until(n)` reads until `n` events have arrived (or the stream
 * ends) and returns them all, each made by `parse` from its block; comment lines (keep-alives) are
 * counted apart. The JSON-RPC face's events are `data:` lines (the default); the Pure HTTP face's
 * name themselves (see {@link namedEvent}).
 */
export function sseReader<E = any>(body: ReadableStream<Uint8Array>, parse: (block: string) => E = (block) => JSON.parse(block.replace(/^data: /, '')) as E) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const events: E[] = []
  let comments = 0
  const until = async (n: number) => {
    while (events.length < n) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += value
      let end
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (block.startsWith(':')) comments++
        else events.push(parse(block))
      }
    }
    return events
  }
  return { until, comments: () => comments, reader }
}

/** A Pure HTTP event, `event: <name>` then its JSON `data:` (anything else is kept whole, as `unframed`). */
export function namedEvent(block: string): { event: string; data: any } {
  const m = /^event: (\w+)\ndata: (.*)$/s.exec(block)
  return m === null ? { event: 'unframed', data: block } : { event: m[1]!, data: JSON.parse(m[2]!) }
}
