/*
 * A stream route's status (and its error text, when it is one) without waiting for the stream to
 * end: an accepted stream answers its status and headers, then may never end (the events stream
 * follows NATS until the client leaves), so the request is hung up on once the head is read.
 */
export async function headOfStream(
  base: string,
  method: string,
  path: string,
  token: string,
  rawBody?: string | Buffer,
): Promise<{ status: number; text: string; body: unknown }> {
  const abort = new AbortController()
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(rawBody === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(rawBody === undefined ? {} : { body: rawBody }),
    signal: abort.signal,
  })
  const text = res.status >= 400 ? await res.text() : ''
  abort.abort()
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: res.status, text, body }
}
