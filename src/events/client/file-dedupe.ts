import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { dirname } from 'node:path'
import type { DedupeStore } from './dedupe.ts'

/*
 * The default de-dup store: the handled keys in a local file, one line each (`<ms since epoch>
 * <key>`), appended as they are recorded and all held in memory. A key is kept 25 hours: the
 * EVENTS stream keeps an event 24, so no copy of an event can come after its key is gone. At
 * open the file is read and rewritten with the keys still kept; it is rewritten again whenever
 * twice as many lines as kept keys have piled up.
 *
 * Why a file and not a NATS KV bucket: creating a bucket is creating a stream, and a NATS
 * permission can name the stream but not its configuration — an `events` user allowed to create
 * `KV_EVENTS_DEDUPE` could create it on `_INBOX.>` and read every other client's replies. A line
 * written before a kill -9 is in the file (the kernel has it); a power loss can drop the last
 * lines, and those events would be handled again.
 *
 * One process per file: a `<file>.lock` holding the owner's pid keeps a second one out (a lock
 * left by a process that is gone is taken over).
 */
export const FILE_DEDUPE_TTL_MS = 25 * 3600 * 1000

export interface FileDedupeOptions {
  /** How long a key is kept. Default 25 h (the stream keeps events 24 h). */
  ttlMs?: number
  now?: () => number
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function takeLock(lock: string): void {
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx', mode: 0o600 })
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = Number(readFileSync(lock, 'utf8').trim())
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner))
        throw new Error(`${lock} says process ${String(owner)} uses this de-dup file: one process per file`, {
          cause: err,
        })
      rmSync(lock, { force: true })
    }
  }
  throw new Error(`could not take ${lock}`)
}

export function fileDedupe(path: string, o: FileDedupeOptions = {}): DedupeStore {
  const ttl = o.ttlMs ?? FILE_DEDUPE_TTL_MS
  const now = o.now ?? Date.now
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const lock = `${path}.lock`
  takeLock(lock)
  // insertion order is time order: the oldest keys are at the front
  const keys = new Map<string, number>()
  if (existsSync(path))
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const space = line.indexOf(' ')
      const at = Number(line.slice(0, space))
      // a line cut short by a crash has no key or no time: skipped
      if (space > 0 && space < line.length - 1 && Number.isFinite(at)) {
        const key = line.slice(space + 1)
        keys.delete(key)
        keys.set(key, at)
      }
    }
  let fd = -1
  let lines = 0
  const expire = () => {
    const oldest = now() - ttl
    for (const [key, at] of keys) {
      if (at >= oldest) break
      keys.delete(key)
    }
  }
  const rewrite = () => {
    expire()
    const tmp = `${path}.tmp`
    writeFileSync(tmp, [...keys].map(([key, at]) => `${String(at)} ${key}\n`).join(''), { mode: 0o600 })
    if (fd >= 0) closeSync(fd)
    renameSync(tmp, path)
    fd = openSync(path, 'a', 0o600)
    lines = keys.size
  }
  rewrite()

  return {
    has(key) {
      const at = keys.get(key)
      return Promise.resolve(at !== undefined && at >= now() - ttl)
    },
    add(key) {
      if (fd < 0) return Promise.reject(new Error('the de-dup file is closed'))
      if (key.includes('\n')) return Promise.reject(new Error('a de-dup key has no line break'))
      const at = now()
      writeSync(fd, `${String(at)} ${key}\n`)
      keys.delete(key)
      keys.set(key, at)
      // the expired keys are at the front: dropping them costs what expired since the last add
      expire()
      if (++lines > 2 * keys.size + 1000) rewrite()
      return Promise.resolve()
    },
    close() {
      if (fd >= 0) closeSync(fd)
      fd = -1
      rmSync(lock, { force: true })
      return Promise.resolve()
    },
  }
}
