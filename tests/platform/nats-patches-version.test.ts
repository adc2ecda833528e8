import { Parser, ProtocolHandler } from '@nats-io/nats-core/internal'
import t from 'tap'
import type { Logger } from '../../src/kernel/log.ts'
import { applyLargeMessages, PATCHED_NATS_CORE } from '../../src/platform/nats-large-messages.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { readServices } from '../setup/services.ts'

/*
 * On a @nats-io/nats-core other than the one the large-message patches were written for, nats.js
 * stays as it is and one warning says so, however many connections follow (a process of its own:
 * the patches are applied, or refused, once per process).
 */
t.test('another nats-core version: one warning, nats.js unpatched', async (t) => {
  const warned: unknown[][] = []
  // connectNats also warns of connection status changes: only the patches' warnings count here
  const log = { warn: (...args: unknown[]) => void warned.push(args) } as unknown as Logger
  const warnings = () => warned.filter((w) => String(w[1]).includes('large-message'))
  const parse = Parser.prototype.parse
  const flush = (ProtocolHandler.prototype as unknown as { flushPending(): void }).flushPending
  applyLargeMessages(log, '3.5.0')
  applyLargeMessages(log, '3.5.0')
  const nc = await connectNats(readServices().natsUrl, 'nats-patches-version-test', log)
  t.teardown(() => nc.close())
  t.equal(warnings().length, 1, 'warned once')
  t.match(warnings()[0]?.[0], { installed: '3.5.0', patched_for: PATCHED_NATS_CORE })
  t.equal(Parser.prototype.parse, parse, 'the parser is stock')
  t.equal((ProtocolHandler.prototype as unknown as { flushPending(): void }).flushPending, flush, 'the flush is stock')
})
