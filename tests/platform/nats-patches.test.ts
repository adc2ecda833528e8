import { Parser, ProtocolHandler } from '@nats-io/nats-core/internal'
import t from 'tap'
import { createLogger } from '../../src/kernel/log.ts'
import { installedNatsCore, PATCHED_NATS_CORE } from '../../src/platform/nats-large-messages.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { readServices } from '../setup/services.ts'

/*
 * connectNats switches on the large-message patches (src/platform/nats-large-messages.ts) for the
 * whole process, as it does the write batching, on the installed @nats-io/nats-core the patches
 * were written for (the pinned version; another one is nats-patches-version.test.ts, in a process
 * of its own because the patches are applied once per process).
 */
t.test('connectNats patches nats.js for large messages on the version they were written for', async (t) => {
  t.equal(installedNatsCore(), PATCHED_NATS_CORE, 'the installed nats-core is the pinned version')
  const parse = Parser.prototype.parse
  const flush = (ProtocolHandler.prototype as unknown as { flushPending(): void }).flushPending
  const nc = await connectNats(readServices().natsUrl, 'nats-patches-test', createLogger({ level: 'silent' }))
  t.teardown(() => nc.close())
  t.not(Parser.prototype.parse, parse, 'the parser is patched')
  t.equal(Parser.prototype.parse.name, 'parseLarge')
  t.not((ProtocolHandler.prototype as unknown as { flushPending(): void }).flushPending, flush, 'the flush is patched')
})
