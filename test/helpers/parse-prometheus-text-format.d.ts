// The parser ships no types: what the tests use of it.
declare module 'parse-prometheus-text-format' {
  export default function parsePrometheusTextFormat(text: string): unknown[]
}
