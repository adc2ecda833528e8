import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { spawnReady } from './child.ts'

/* Starts tests/helpers/smtp-sink.ts and hands out the messages it receives, per recipient. */
export interface Mail {
  to: string[]
  from: string | null
  subject: string
  text: string
  /** The From header as written (display name and address). */
  fromHeader: string
  /** The HTML part ('' when none). */
  html: string
  /** Lower-case names of every header of the message. */
  headerKeys: string[]
}

export async function startSmtpSink(t: {
  teardown(fn: () => unknown): void
}): Promise<{ port: number; next(to: string, timeoutMs?: number): Promise<Mail>; received(to: string): Mail[] }> {
  const { proc, ready } = await spawnReady(t, join(import.meta.dirname, 'smtp-sink.ts'), {})
  const inbox: Mail[] = []
  const waiters: { to: string; resolve(m: Mail): void }[] = []
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    if (!line.startsWith('mail ')) return
    const mail = JSON.parse(line.slice(5)) as Mail
    const w = waiters.findIndex((x) => mail.to.includes(x.to))
    if (w >= 0) waiters.splice(w, 1)[0]?.resolve(mail)
    else inbox.push(mail)
  })
  return {
    port: Number(ready),
    received: (to) => inbox.filter((m) => m.to.includes(to)),
    next(to, timeoutMs = 10_000) {
      const i = inbox.findIndex((m) => m.to.includes(to))
      if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0] as Mail)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no mail to ${to} within ${String(timeoutMs)} ms`)), timeoutMs)
        waiters.push({
          to,
          resolve: (m) => {
            clearTimeout(timer)
            resolve(m)
          },
        })
      })
    },
  }
}
