import { useEffect, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import { Button } from '../../ui/index.ts'
import type { ChatSummary, Named } from '../work/types.ts'

/* The caller's chats, newest first, and the form that starts a chat with an agent. */
export function ChatList({
  chats,
  current,
  onNew,
}: {
  chats: ChatSummary[] | undefined
  current: string | undefined
  onNew: (agent: string) => Promise<void>
}) {
  const [agents, setAgents] = useState<string[]>([])
  const [agent, setAgent] = useState('')
  const [starting, setStarting] = useState(false)
  useEffect(() => {
    const ac = new AbortController()
    const load = async () => {
      try {
        const list = await api<Named[]>('GET', '/agents', { query: { limit: 1000 }, signal: ac.signal })
        const refs = list.map((a) => `${a.namespace}/${a.name}`)
        setAgents(refs)
        // `?agent=` (the agents page's Chat link) picks the agent of the next chat
        const wanted = new URLSearchParams(window.location.search).get('agent')
        setAgent((a) => (a !== '' ? a : wanted !== null && refs.includes(wanted) ? wanted : (refs[0] ?? '')))
      } catch {
        setAgents([])
      }
    }
    void load()
    return () => ac.abort()
  }, [])
  const start = async (e: FormEvent) => {
    e.preventDefault()
    if (agent === '') return
    setStarting(true)
    try {
      await onNew(agent)
    } finally {
      setStarting(false)
    }
  }
  const sorted = (chats ?? [])
    .slice()
    .sort((a, b) => (b.last_message_at ?? b.created_at).localeCompare(a.last_message_at ?? a.created_at))
  return (
    <nav className="chat-list" aria-label="Chats">
      <form className="chat-new" onSubmit={(e) => void start(e)}>
        <label htmlFor="chat-agent">Agent</label>
        <select id="chat-agent" value={agent} onChange={(e) => setAgent(e.target.value)}>
          {agents.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <Button kind="primary" type="submit" disabled={agent === ''} busy={starting}>
          New chat
        </Button>
      </form>
      {chats === undefined ? (
        <p className="muted">Loading…</p>
      ) : sorted.length === 0 ? (
        <p className="muted">No chats yet.</p>
      ) : (
        <ul>
          {sorted.map((c) => (
            <li key={c.id}>
              <Link href={`/chat/${c.id}`} className="chat-link" aria-current={c.id === current ? 'page' : undefined}>
                <span className="chat-link-title">{c.title ?? `${c.agent_namespace}/${c.agent_name}`}</span>
                <span className="chat-link-date">{new Date(c.last_message_at ?? c.created_at).toLocaleString()}</span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </nav>
  )
}
