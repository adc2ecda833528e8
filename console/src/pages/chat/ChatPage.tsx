import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { openEventStream, type StreamEvent } from '../../api/sse.ts'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { Button, ErrorBanner } from '../../ui/index.ts'
import type { Chat, ChatSummary } from '../work/types.ts'
import { ChatList } from './ChatList.tsx'
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
  type Part,
} from './transcript.ts'
import { VirtualList } from './VirtualList.tsx'

/*
 * The chat page (`/chat`, `/chat/:id`): the caller's chats, one chat's history in a virtual list,
 * and the turn being streamed. Deltas are folded into the live turn as they arrive and painted
 * once per animation frame; a pending tool call is approved or refused in place (the turn goes on
 * on the channel the approval answers); a reload resumes the stream from the last event id seen
 * (resume.ts); Stop asks the platform to cancel the chat's running turn (`POST /chats/{id}/cancel`:
 * the provider call stops now, not after SSE_RECONNECT_WINDOW_SECONDS as for a turn nobody
 * listens to), then drops the stream; the stopped turn stays as it was shown until the next
 * turn's end reloads the stored history (which keeps the user's message, not the half reply).
 */
type StreamStart =
  | { kind: 'send'; content: string }
  | { kind: 'resume'; channel: string; lastId: string; user: string | null; parts: Part[] }
  | { kind: 'approve'; channel: string }

const rt = { runtime: true } as const

export default function ChatPage({ params }: PageProps) {
  const chatId = params['id']
  const [chats, setChats] = useState<ChatSummary[] | undefined>(undefined)
  const [history, setHistory] = useState<Item[]>([])
  const [chat, setChat] = useState<Chat | null>(null)
  const [turn, setTurn] = useState<LiveTurn | null>(null)
  const [error, setError] = useState<unknown>(undefined)
  const [draft, setDraft] = useState('')
  const [deciding, setDeciding] = useState(false)
  const stream = useRef<AbortController | null>(null)
  // deltas land here and reach the state once per frame: one paint per frame, not per token
  const pending = useRef<LiveTurn | null>(null)
  const frame = useRef(0)
  // where the stream of the live turn is (its channel and last event id), kept with what it showed
  const at = useRef<{ chatId: string; channel: string; lastId: string | undefined; user: string | null } | null>(null)

  const loadChats = useCallback(async () => {
    try {
      setChats(await api<ChatSummary[]>('GET', '/chats', { ...rt, query: { limit: 200 } }))
    } catch (err) {
      setError(err)
    }
  }, [])
  useEffect(() => {
    void loadChats()
  }, [loadChats])

  const loadChat = useCallback(async (id: string) => {
    const c = await api<Chat>('GET', `/chats/${id}`, rt)
    setChat(c)
    setHistory(itemsOf(c.messages, c.pending_approvals))
    return c
  }, [])

  const flush = useCallback(() => {
    frame.current = 0
    const turn = pending.current
    setTurn(turn)
    // the resume point of a reload, written with what was painted (once per frame, not per token)
    const a = at.current
    if (turn?.status === 'streaming' && a !== null && a.channel !== '' && a.lastId !== undefined)
      writeResume(a.chatId, { channel: a.channel, lastId: a.lastId, user: a.user, parts: turn.parts })
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
      let current: LiveTurn =
        start.kind === 'approve' && pending.current !== null
          ? { ...pending.current, status: 'streaming', approvals: [] }
          : start.kind === 'resume'
            ? { ...newTurn(user), parts: start.parts }
            : newTurn(user)
      const point = {
        chatId: id,
        channel: start.kind === 'send' ? '' : start.channel,
        lastId: start.kind === 'resume' ? start.lastId : undefined,
        user,
      }
      at.current = point
      update(current)
      let asked = false
      const learnChannel = async () => {
        try {
          point.channel = (await api<Chat>('GET', `/chats/${id}`, rt)).active_channel_id ?? ''
        } catch {
          // no resume point: a reload then shows the stored history only
        }
      }
      const onEvent = (e: StreamEvent) => {
        let data: unknown = e.data
        try {
          data = JSON.parse(e.data)
        } catch {
          // a non-JSON data line stays text
        }
        current = applyEvent(current, e.event, data)
        if (e.id !== undefined) point.lastId = e.id
        if (point.channel === '' && !asked) {
          // the channel of a sent message is the chat's active one: learnt once, for a resume
          asked = true
          void learnChannel()
        }
        update(current)
      }
      try {
        if (start.kind === 'send')
          await openEventStream(`/chats/${id}/messages/stream`, onEvent, {
            method: 'POST',
            body: { content: start.content },
            signal: ac.signal,
          })
        else
          await openEventStream(`/chats/${id}/stream/${start.channel}`, onEvent, {
            signal: ac.signal,
            ...(point.lastId === undefined ? {} : { lastEventId: point.lastId }),
          })
        // a POST stream cut before its end goes on where it stopped, on the turn's channel
        if (!ac.signal.aborted && current.status === 'streaming' && start.kind === 'send' && point.channel !== '')
          await openEventStream(`/chats/${id}/stream/${point.channel}`, onEvent, {
            signal: ac.signal,
            ...(point.lastId === undefined ? {} : { lastEventId: point.lastId }),
          })
      } catch (err) {
        if (!ac.signal.aborted)
          current = { ...current, status: 'error', error: err instanceof Error ? err.message : String(err) }
      }
      if (ac.signal.aborted) return
      stream.current = null
      if (current.status === 'streaming')
        current = { ...current, status: 'error', error: 'the stream ended before the turn did' }
      update(current)
      at.current = null
      clearResume(id)
      // a paused turn stays as it is until the call is decided (the stored history has the call)
      if (current.status === 'awaiting_approval') return
      // the stored history is the truth once the turn ended: it replaces the live view
      try {
        await loadChat(id)
        const last = current
        pending.current = null
        setTurn(last.status === 'error' || last.status === 'blocked' ? { ...last, user: null, parts: [] } : null)
      } catch (err) {
        setError(err)
      }
      void loadChats()
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
    setError(undefined)
    if (chatId === undefined) return
    let live = true
    const open = async () => {
      try {
        const c = await loadChat(chatId)
        const point = readResume(chatId)
        if (!live || point === null) return
        if (c.active_channel_id !== point.channel) clearResume(chatId)
        else
          void run(chatId, {
            kind: 'resume',
            channel: point.channel,
            lastId: point.lastId,
            user: point.user,
            parts: point.parts,
          })
      } catch (err) {
        if (live) setError(err)
      }
    }
    void open()
    return () => {
      live = false
    }
  }, [chatId, loadChat, run])

  useEffect(
    () => () => {
      stream.current?.abort()
      cancelAnimationFrame(frame.current)
    },
    [],
  )

  const streaming = turn !== null && turn.status === 'streaming'

  const send = (e: FormEvent) => {
    e.preventDefault()
    const content = draft.trim()
    if (chatId === undefined || content === '' || streaming) return
    setDraft('')
    void run(chatId, { kind: 'send', content })
  }

  const stop = () => {
    // the cancel is sent before the stream is dropped: the turn's end event is not waited for
    const cancelled =
      chatId === undefined ? undefined : api<ResponseOf<'chats.cancel'>>('POST', `/chats/${chatId}/cancel`, rt)
    stream.current?.abort()
    stream.current = null
    at.current = null
    if (chatId !== undefined) clearResume(chatId)
    if (pending.current !== null) update({ ...pending.current, status: 'stopped' })
    // the stopped turn stays on screen as it was; the next turn's end reloads the stored history
    cancelled?.catch((err: unknown) => setError(err))
  }

  const decide = useCallback(
    async (toolCallId: string, approved: boolean) => {
      if (chatId === undefined) return
      setDeciding(true)
      try {
        const answer = await api<{ channel_id: string }>(
          'POST',
          `/chats/${chatId}/approve-tool/${encodeURIComponent(toolCallId)}`,
          { ...rt, body: { approved } },
        )
        const state = approved ? 'running' : 'refused'
        if (pending.current === null) {
          // a call found in the stored history (after a reload): its turn goes on live
          pending.current = newTurn(null)
          setHistory((h) => markTool(h, toolCallId, state))
        } else
          pending.current = {
            ...pending.current,
            parts: pending.current.parts.map((p) => (p.type === 'tool' && p.id === toolCallId ? { ...p, state } : p)),
          }
        void run(chatId, { kind: 'approve', channel: answer.channel_id })
      } catch (err) {
        setError(err)
      } finally {
        setDeciding(false)
      }
    },
    [chatId, run],
  )

  const newChat = async (agent: string) => {
    try {
      const [ns, name] = agent.split('/') as [string, string]
      const c = await api<ChatSummary>('POST', `/agents/${ns}/${name}/chats`, { ...rt, body: {} })
      await loadChats()
      navigate(`/chat/${c.id}`)
    } catch (err) {
      setError(err)
    }
  }

  // one stable callback for every row, so a memoized row re-renders only when its item changes
  const decideRef = useRef(decide)
  decideRef.current = decide
  const onDecide = useCallback((id: string, ok: boolean) => void decideRef.current(id, ok), [])
  const items = useMemo(() => withLive(history, turn), [history, turn])
  const renderItem = useCallback(
    (item: Item) => <Message item={item} onDecide={onDecide} busy={deciding} />,
    [onDecide, deciding],
  )

  return (
    <div className="chat-page">
      <h1 className="sr-only">Chat</h1>
      <ChatList chats={chats} current={chatId} onNew={newChat} />
      <section className="chat-main" aria-label="Conversation">
        <ErrorBanner error={error} />
        {chat === null ? (
          <div className="chat-empty muted">
            {chatId === undefined ? 'Pick a chat or start a new one.' : 'Loading…'}
          </div>
        ) : (
          <>
            <header className="chat-head">
              <h2>{chat.title ?? `${chat.agent_namespace}/${chat.agent_name}`}</h2>
              <span className="chat-status" data-status={turn?.status ?? 'idle'} role="status">
                {turn === null ? '' : STATUS[turn.status]}
              </span>
            </header>
            <VirtualList items={items} itemKey={keyOf} render={renderItem} label="Messages" className="chat-messages" />
            <form className="composer" onSubmit={send}>
              <label htmlFor="chat-input" className="sr-only">
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
                <Button onClick={stop}>Stop</Button>
              ) : (
                <Button kind="primary" type="submit" disabled={draft.trim() === ''}>
                  Send
                </Button>
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

function markTool(items: Item[], id: string, state: 'running' | 'refused'): Item[] {
  return items.map((it) =>
    it.parts.some((p) => p.type === 'tool' && p.id === id)
      ? { ...it, parts: it.parts.map((p) => (p.type === 'tool' && p.id === id ? { ...p, state } : p)) }
      : it,
  )
}
