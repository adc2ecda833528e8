import { chatService, type ChatHandlerDeps, type ChatService } from '../chats/service.ts'
import type { Logger } from '../kernel/log.ts'
import { providerDirectory, type ProviderDirectory } from './providers.ts'

export interface AdapterDeps extends ChatHandlerDeps {
  log: Logger
  /** Provider directory (default: built here over db/resources, 10 s TTL). */
  providers?: ProviderDirectory
  /** Lifetime of the internal chat an agent completion runs in (default 3600 s). */
  chatTtlSeconds?: number
  /** Longest wait for a provider's first event before a stream is answered anyway (default 10 s). */
  firstEventWaitMs?: number
}

/** What the adapter's handlers share: the deps, the chat service, the provider directory, the settled defaults. */
export interface AdapterContext {
  d: AdapterDeps
  svc: ChatService
  providers: ProviderDirectory
  chatTtl: number
  firstEventWaitMs: number
  log: Logger
}

export function adapterContext(d: AdapterDeps): AdapterContext {
  return {
    d,
    svc: chatService(d),
    providers: d.providers ?? providerDirectory({ resources: d.resources }),
    chatTtl: d.chatTtlSeconds ?? 3600,
    firstEventWaitMs: d.firstEventWaitMs ?? 10_000,
    log: d.log,
  }
}
