import type { Part } from './transcript.ts'

/*
 * Where a streamed turn was, kept in sessionStorage per chat so a reload of the tab resumes it
 * (GET /chats/{id}/stream/{channel} with Last-Event-ID) instead of losing the answer: the channel,
 * the last event id and what the page showed up to that event, written together once per frame.
 * A record is dropped when its turn ends or pauses; one for another channel than the chat's active
 * one is stale.
 */
export interface ResumePoint {
  channel: string
  lastId: string
  user: string | null
  parts: Part[]
}

const keyOf = (chatId: string) => `console.chat-stream.${chatId}`

export function readResume(chatId: string): ResumePoint | null {
  try {
    const raw = sessionStorage.getItem(keyOf(chatId))
    const point = raw === null ? null : (JSON.parse(raw) as ResumePoint)
    return point !== null && Array.isArray(point.parts) ? point : null
  } catch {
    return null
  }
}

export function writeResume(chatId: string, point: ResumePoint): void {
  try {
    sessionStorage.setItem(keyOf(chatId), JSON.stringify(point))
  } catch {
    // storage full or disabled: a reload then shows the stored history only
  }
}

export function clearResume(chatId: string): void {
  try {
    sessionStorage.removeItem(keyOf(chatId))
  } catch {
    // nothing to clear
  }
}
