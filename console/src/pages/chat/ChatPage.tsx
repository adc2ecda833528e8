import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react'
import { describe } from '../work/describe.ts'
import { useSearchParam } from '../work/location.ts'
import { runtime } from '../work/runtime.ts'
import { fetchEventStream, type SseEvent } from '../work/sse-fetch.ts'
import { ChatList, type ChatSummary } from './ChatList.tsx'
import { Message } from './Message.tsx'
import { clearResume, readResume, writeResume } from './resume.ts'
import {
  applyEvent,
  isTerminal,
  itemsOf,
  newTurn,
  withLive,
  type Item,
  type LiveTurn,
  type PendingApproval,
  type StoredMessage,
} from './transcript.ts'
import { VirtualList } from './VirtualList.tsx'

/*
 * The chat page: the caller's chats, one chat's history in a virtual list, and the turn being
 * streamed. Deltas are folded into the live turn as they arrive and painted once per animation
 * frame; a pending tool call is approved or refused in place (the turn continues on the channel
 * the approval answers); a reload resumes the stream from the last event id seen (resume.ts);
 * Stop drops the stream, and the platform cancels a turn nobody listens to.
 */
interface ChatWithMessages extends ChatSummary {
  messages: StoredMessage[]
  pending_approvals: PendingApproval[]
  active_channel_id: string | null
}

type StreamStart =
  | { kind: 'send'; content: string }
  | { kind: 'resume'; channel: string; lastId: number; user: string | null }
  | { kind: 'approve'; channel: string }

export default function ChatPage() {
  const [chatId, setChatId] = useSearchParam('chat')
  const [chats, setChats] = useState<ChatSummary[] | null>(null)
  const [history, setHistory] = useState<Item[]>([])
  const [chat, setChat] = useState<ChatWithMessages | null>(null)
  const [turn, setTurn] = useState<LiveTurn | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [draft, setDraft] = useState('')
  const [deciding, setDeciding] = useState(false)
  const stream = useRef<AbortController | null>(null)
  // deltas land here and reach the state once per frame: one paint per frame, not per token
  const pending = useRef<LiveTurn | null>(null)
  const frame = useRef(0)

  const loadChats = useCallback(async () => {
    try {
      setChats(await runtime<ChatSummary[]>('GET', '/chats', { query: { limit: 200 } }))
    } catch (err) {
      setError(describe(err))
    }
  }, [])
  useEffect(() => {
    void loadChats()
  }, [loadChats])

  const loadChat = useCallback(async (id: string) => {
    const c = await runtime<ChatWithMessages>('GET', `/chats/${id}`)
    setChat(c)
    setHistory(itemsOf(c.messages, c.pending_approvals))
    return c
  }, [])

  const flush = useCallback(() => {
    frame.current = 0
    setTurn(pending.current)
  }, [])
  const update = useCallback(
    (next: LiveTurn) => {
      pending.current = next
      if (isTerminal(next) || next.status === 'awaiting_approval') {
        cancelAnimationFrame(frame.current)
        flush()
      } else if (frame.current === 0) frame.current = requestAnimationFrame(flush)
    },
    [flush],
  )

  const run = useCallback(
    async (id: string, start: StreamStart) => {
      stream.current?.abort()
      const ac = new AbortController()
      stream.current = ac
      const user = start.kind === 'send' ? start.content : start.kind === 'resume' ? start.user : null
      let current = start.kind === 'approve' && pending.current !== null ? { ...pending.current, status: 'streaming' as const, approvals: [] } : newTurn(user)
      update(current)
      let channel = start.kind === 'send' ? '' : start.channel
      const onEvent = (e: SseEvent) => {
        current = applyEvent(current, e.event, e.data)
        if (e.id !== null && channel !== '') writeResume(id, { channel, lastId: e.id, user })
        update(current)
      }
      try {
        if (start.kind === 'send')
          await fetchEventStream(`/chats/${id}/messages/stream`, onEvent, {
            method: 'POST',
            body: { content: start.content },
            signal: ac.signal,
            onOpen: (res) => {
              channel = res.headers.get('x-channel-id') ?? ''
              if (channel !== '') writeResume(id, { channel, lastId: 0, user })
            },
          })
        else
          await fetchEventStream(`/chats/${id}/stream/${start.channel}`, onEvent, {
            signal: ac.signal,
            ...(start.kind === 'resume' ? { lastEventId: start.lastId } : {}),
          })
      } catch (err) {
        if (!ac.signal.aborted) update({ ...current, status: 'error', error: describe(err) })
      }
      if (ac.signal.aborted) return
      stream.current = null
      if (current.status === 'streaming') update({ ...current, status: 'error', error: 'the stream ended before the turn did' })
      if (pending.current !== null && pending.current.status !== 'awaiting_approval') {
        clearResume(id)
        // the stored history is the truth once the turn ended: it replaces the live view
        try {
          await loadChat(id)
          const last = pending.current
          setTurn(last.status === 'error' || last.status === 'blocked' ? { ...last, user: null, parts: [] } : null)
          pending.current = null
        } catch (err) {
          setError(describe(err))
        }
        void loadChats()
      }
    },
    [update, loadChat, loadChats],
  )

  // open a chat: its history, then the turn still streaming when the tab was reloaded
  useEffect(() => {
    stream.current?.abort()
    stream.current = null
    pending.current = null
    setTurn(null)
    setChat(null)
    setHistory([])
    setError(null)
    if (chatId === null) return
    let live = true
    const open = async () => {
      try {
        const c = await loadChat(chatId)
        const point = readResume(chatId)
        if (!live || point === null) return
        if (c.active_channel_id !== point.channel) clearResume(chatId)
        else void run(chatId, { kind: 'resume', channel: point.channel, lastId: point.lastId, user: point.user })
      } catch (err) {
        if (live) setError(describe(err))
      }
    }
    void open()
    return () => {
      live = false
    }
  }, [chatId, loadChat, run])

  useEffect(() => () => stream.current?.abort(), [])

  const send = (e: FormEvent) => {
    e.preventDefault()
    const content = draft.trim()
    if (chatId === null || content === '' || streaming) return
    setDraft('')
    setTurn(null)
    void run(chatId, { kind: 'send', content })
  }

  const stop = () => {
    stream.current?.abort()
    stream.current = null
    if (chatId !== null) clearResume(chatId)
    if (pending.current !== null) update({ ...pending.current, status: 'stopped' })
  }

  const decide = async (toolCallId: string, approved: boolean) => {
    if (chatId === null) return
    setDeciding(true)
    try {
      const answer = await runtime<{ channel_id: string }>('POST', `/chats/${chatId}/approve-tool/${encodeURIComponent(toolCallId)}`, {
        body: { approved },
      })
      if (pending.current === null) {
        // approving a call found in the stored history (after a reload): the turn goes on live
        pending.current = newTurn(null)
        setHistory((h) => markDecided(h, toolCallId, approved))
      } else pending.current = { ...pending.current, parts: pending.current.parts.map((p) => (p.type === 'tool' && p.id === toolCallId ? { ...p, state: approved ? 'running' : 'refused' } : p)) }
      void run(chatId, { kind: 'approve', channel: answer.channel_id })
    } catch (err) {
      setError(describe(err))
    } finally {
      setDeciding(false)
    }
  }

  const newChat = async (agent: string) => {
    try {
      const [ns, name] = agent.split('/')
      const c = await runtime<ChatSummary>('POST', `/agents/${ns}/${name}/chats`, { body: {} })
      await loadChats()
      setChatId(c.id)
    } catch (err) {
      setError(describe(err))
    }
  }

  const streaming = turn !== null && turn.status === 'streaming'
  const items = useMemo(() => withLive(history, turn), [history, turn])
  const renderItem = useCallback((item: Item) => <Message item={item} onDecide={decide} busy={deciding} />, [deciding, chatId])

  return (
    <div className="chat-page">
      <ChatList chats={chats} current={chatId} onOpen={setChatId} onNew={newChat} />
      <section className="chat-main" aria-label="Chat">
        {error !== null && (
          <div className="banner banner-error" role="alert">
            {error}
          </div>
        )}
        {chat === null ? (
          <div className="chat-empty">{chatId === null ? 'Pick a chat or start a new one.' : 'Loading…'}</div>
        ) : (
          <>
            <header className="chat-head">
              <h2>{chat.title ?? `${chat.agent_namespace}/${chat.agent_name}`}</h2>
              <span className="chat-status" data-status={turn?.status ?? 'idle'}>
                {turn === null ? '' : STATUS[turn.status]}
              </span>
            </header>
            <VirtualList items={items} itemKey={keyOf} render={renderItem} label="Messages" className="chat-messages" />
            <form className="composer" onSubmit={send}>
              <label htmlFor="chat-input" className="visually-hidden">
                Message
              </label>
              <textarea
                id="chat-input"
                value={draft}
                rows={2}
                placeholder="Write a message…"
                onChange={(e) => setDraft(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && !e.shiftKey) send(e)
                }}
              />
              {streaming ? (
                <button type="button" className="btn" onClick={stop}>
                  Stop
                </button>
              ) : (
                <button type="submit" className="btn btn-primary" disabled={draft.trim() === ''}>
                  Send
                </button>
              )}
            </form>
          </>
        )}
      </section>
    </div>
  )
}

const keyOf = (item: Item) => item.key

const STATUS: Record<LiveTurn['status'], string> = {
  streaming: 'answering…',
  awaiting_approval: 'waiting for approval',
  completed: '',
  blocked: 'blocked by a hook',
  error: 'failed',
  stopped: 'stopped',
}

function markDecided(items: Item[], id: string, approved: boolean): Item[] {
  return items.map((it) =>
    it.parts.some((p) => p.type === 'tool' && p.id === id)
      ? { ...it, parts: it.parts.map((p) => (p.type === 'tool' && p.id === id ? { ...p, state: approved ? 'running' : 'refused' } : p)) }
      : it,
  )
}
