import { randomUUID } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import { FILE_NAME_PATTERN, type BlobUploadPlan, type FileRecord } from '../../schemas/collection.ts'
import type { BlobPhase } from '../api/route.ts'
import type { Principal } from '../auth/principal.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { AppError, invalid } from '../kernel/errors.ts'
import type { BlobInfo } from '../platform/blob-store.ts'
import { canSeeFile, collectionFor, type CollectionRecord } from './access.ts'
import { runCollectionFunction, type FilesDeps } from './functions.ts'
import { toFileRecord } from './records.ts'
import {
  collectionBytes,
  discardObject,
  nfc,
  recordVersion,
  releaseReservation,
  reserveObject,
  versionsOf,
} from './store.ts'

/*
 * Every way a file version is written ends in `storeVersion`: a streamed upload (prepare, the
 * gateway streams the bytes into the reserved object, commit), a JSON upload (the service writes
 * the decoded bytes itself), and the agents' write tools. In that order: file name, metadata
 * against the collection's metadata_schema, content filter (approve / reject / modify), text for
 * search, then the version row under the collection's lock (max_total_size_gb checked again), and
 * the post-upload function as an async job. An object that is not recorded is deleted.
 */
const MIB = 1024 * 1024
const GIB = 1024 * MIB
const NAME_RE = new RegExp(FILE_NAME_PATTERN)
const OBJECT_RE = /^v\/[0-9a-f-]{36}$/

export const collectionFull = () =>
  new AppError(413, 'file.collection_full', 'the collection has reached max_total_size_gb')
const tooLarge = (max: number) =>
  new AppError(
    413,
    'file.too_large',
    `the file is larger than the ${String(max)} bytes this upload may take (max_file_size_mb, or what is left of max_total_size_gb)`,
  )

/** Path traversal and other unusable names are refused, never rewritten (schemas/collection.ts FileName). */
export function checkFileName(name: string | null | undefined): string {
  if (name === null || name === undefined || name === '')
    throw invalid(
      'a file name is required (form field or ?name=)',
      [{ path: 'name', message: 'required' }],
      'file.invalid_name',
    )
  if (!NAME_RE.test(name))
    throw invalid(
      `invalid file name ${JSON.stringify(name.slice(0, 300))}: one path segment, no / or \\, not . or .., no control characters`,
      [{ path: 'name', message: 'not a plain file name' }],
      'file.invalid_name',
    )
  // stored in NFC (store.ts `nfc`): both spellings of `café.txt` name one file
  return nfc(name)
}

/** The bytes one upload may still take: the per-file limit, or what is left of the collection's. */
async function uploadAllowance(d: FilesDeps, c: CollectionRecord): Promise<number> {
  const remaining = Math.floor(c.max_total_size_gb * GIB) - (await collectionBytes(d.db, c.id))
  if (remaining <= 0) throw collectionFull()
  return Math.min(Math.floor(c.max_file_size_mb * MIB), remaining)
}

export async function prepareUpload(
  d: FilesDeps,
  p: Principal,
  at: { namespace: string; collection: string },
  phase: Extract<BlobPhase, { phase: 'prepare' }>,
): Promise<Static<typeof BlobUploadPlan>> {
  const c = await collectionFor(d.resources, p, at.namespace, at.collection, 'upload')
  const max = await uploadAllowance(d, c)
  if (
    phase.declaredBytes !== null &&
    !phase.contentType.toLowerCase().startsWith('multipart/') &&
    phase.declaredBytes > max
  )
    throw tooLarge(max)
  const object = `v/${randomUUID()}`
  await reserveObject(d.db, object, d.config.FILES_UPLOAD_STAGING_SECONDS)
  return { object, max_bytes: max }
}

export interface UploadFields {
  name?: string | undefined
  visibility?: string | undefined
  file_metadata?: string | Record<string, unknown> | undefined
  update_existing?: boolean | string | undefined
}

function parseFields(f: UploadFields): {
  visibility: 'private' | 'shared' | undefined
  metadata: Record<string, unknown> | undefined
  updateExisting: boolean
} {
  if (f.visibility !== undefined && f.visibility !== 'private' && f.visibility !== 'shared')
    throw invalid('visibility must be private or shared', [{ path: 'visibility', message: 'private | shared' }])
  let metadata: Record<string, unknown> | undefined
  if (typeof f.file_metadata === 'string') {
    let parsed: unknown
    try {
      parsed = JSON.parse(f.file_metadata)
    } catch {
      throw invalid(
        'file_metadata is not valid JSON',
        [{ path: 'file_metadata', message: 'a JSON object' }],
        'file.invalid_metadata',
      )
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw invalid(
        'file_metadata must be a JSON object',
        [{ path: 'file_metadata', message: 'a JSON object' }],
        'file.invalid_metadata',
      )
    metadata = parsed as Record<string, unknown>
  } else metadata = f.file_metadata
  const ue = f.update_existing
  const updateExisting = ue === undefined ? true : ue === true || ue === 'true'
  return { visibility: f.visibility, metadata, updateExisting }
}

export async function commitUpload(
  d: FilesDeps,
  p: Principal,
  at: { namespace: string; collection: string },
  query: UploadFields,
  phase: Extract<BlobPhase, { phase: 'commit' }>,
): Promise<Static<typeof FileRecord>> {
  if (!OBJECT_RE.test(phase.object)) throw new AppError(422, 'request.invalid', 'not an upload object')
  const blobs = await d.blobs()
  try {
    const c = await collectionFor(d.resources, p, at.namespace, at.collection, 'upload')
    const info = await blobs.info(phase.object)
    if (info === null || info.size !== phase.size)
      throw new AppError(500, 'internal', `upload object ${phase.object} is missing or incomplete`)
    const fields = phase.fields
    const name = checkFileName(fields['name'] ?? query.name ?? phase.filename)
    const parsed = parseFields({
      visibility: fields['visibility'] ?? query.visibility,
      file_metadata: fields['file_metadata'] ?? query.file_metadata,
      update_existing: fields['update_existing'] ?? query.update_existing,
    })
    return await storeVersion(d, p, c, { object: phase.object, info, name, contentType: phase.contentType, ...parsed })
  } catch (err) {
    await dropObject(d, phase.object)
    throw err
  }
}

export async function jsonUpload(
  d: FilesDeps,
  p: Principal,
  at: { namespace: string; collection: string },
  body: {
    name: string
    content_base64: string
    content_type?: string
    visibility?: 'private' | 'shared'
    file_metadata?: Record<string, unknown>
    update_existing?: boolean
  },
): Promise<Static<typeof FileRecord>> {
  const c = await collectionFor(d.resources, p, at.namespace, at.collection, 'upload')
  const name = checkFileName(body.name)
  const bytes = Buffer.from(body.content_base64, 'base64')
  return writeBytes(d, p, c, name, bytes, body.content_type ?? 'application/octet-stream', parseFields(body))
}

/** Writes `bytes` as a new version (JSON uploads, agent tools). */
export async function writeBytes(
  d: FilesDeps,
  p: Principal,
  c: CollectionRecord,
  name: string,
  bytes: Buffer,
  contentType: string,
  f: {
    visibility: 'private' | 'shared' | undefined
    metadata: Record<string, unknown> | undefined
    updateExisting: boolean
  },
): Promise<Static<typeof FileRecord>> {
  const max = await uploadAllowance(d, c)
  if (bytes.length > max) throw tooLarge(max)
  const object = `v/${randomUUID()}`
  await reserveObject(d.db, object, d.config.FILES_UPLOAD_STAGING_SECONDS)
  try {
    const info = await (await d.blobs()).putBytes(object, bytes)
    return await storeVersion(d, p, c, { object, info, name, contentType, ...f })
  } catch (err) {
    await dropObject(d, object)
    throw err
  }
}

/** The gateway gave up on a streamed upload: its object (if any chunk survived) goes now, not at the reservation's end. */
export async function abandonUpload(d: FilesDeps, object: string): Promise<void> {
  if (!OBJECT_RE.test(object)) return
  // only a reservation still open (never recorded) may be cut short
  if (await releaseReservation(d.db, object)) await dropObject(d, object)
}

/** Deletes an object that will not be recorded; the garbage row is the fallback when NATS fails now. */
async function dropObject(d: FilesDeps, object: string): Promise<void> {
  await discardObject(d.db, object).catch((err: unknown) =>
    d.log.warn({ err, object }, 'could not mark an upload object for deletion'),
  )
  await (
    await d.blobs()
  )
    .delete(object)
    .catch((err: unknown) => d.log.warn({ err, object }, 'could not delete an upload object now; the sweeper will'))
}

const TEXT_TYPES =
  /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|x-ndjson|csv|sql|toml)\b|[^;]*\+(json|xml)\b)/i

export const isTextType = (contentType: string): boolean => TEXT_TYPES.test(contentType)

/** Text Postgres can store: NUL becomes U+FFFD (src/kernel/storable-text.ts's rule for stored text). */
const storable = (s: string): string => s.replaceAll('\u0000', '\uFFFD')

interface Pending {
  object: string
  info: BlobInfo
  name: string
  contentType: string
  visibility: 'private' | 'shared' | undefined
  metadata: Record<string, unknown> | undefined
  updateExisting: boolean
}

async function storeVersion(
  d: FilesDeps,
  p: Principal,
  c: CollectionRecord,
  u: Pending,
): Promise<Static<typeof FileRecord>> {
  const blobs = await d.blobs()
  let { object, info, contentType, metadata } = u
  const checkMetadata = (m: Record<string, unknown> | undefined) => {
    const issues = validateAgainst(c.metadata_schema, m ?? {}, '/file_metadata')
    if (issues.length > 0)
      throw invalid("file_metadata does not match the collection's metadata_schema", issues, 'file.invalid_metadata')
  }
  checkMetadata(metadata)
  if (c.content_filter_function !== null) {
    const bytes = await blobs.readAll(object, d.config.FILES_CONTENT_FILTER_MAX_BYTES)
    if (bytes === null)
      throw new AppError(
        413,
        'file.too_large',
        `files larger than FILES_CONTENT_FILTER_MAX_BYTES (${String(d.config.FILES_CONTENT_FILTER_MAX_BYTES)}) cannot pass this collection's content filter`,
      )
    const verdict = await contentFilter(d, p, c, { name: u.name, contentType, bytes, metadata })
    if (verdict.action === 'reject')
      throw new AppError(
        422,
        'file.rejected',
        `the content filter rejected the file${verdict.reason === '' ? '' : `: ${verdict.reason}`}`,
      )
    if (verdict.action === 'modify') {
      if (verdict.metadata !== undefined) {
        metadata = verdict.metadata
        checkMetadata(metadata)
      }
      if (verdict.contentType !== undefined) contentType = verdict.contentType
      if (verdict.bytes !== undefined) {
        const max = await uploadAllowance(d, c)
        if (verdict.bytes.length > max) throw tooLarge(max)
        const replaced = `v/${randomUUID()}`
        await reserveObject(d.db, replaced, d.config.FILES_UPLOAD_STAGING_SECONDS)
        const old = object
        object = replaced
        info = await blobs.putBytes(replaced, verdict.bytes)
        await dropObject(d, old)
      }
    }
  }
  let text: string | null = null
  if (isTextType(contentType) && info.size <= d.config.FILES_TEXT_INDEX_MAX_BYTES) {
    const bytes = await blobs.readAll(object, d.config.FILES_TEXT_INDEX_MAX_BYTES)
    text = bytes === null ? null : storable(bytes.toString('utf8'))
  }
  const versionId = object.slice(2)
  const out = await recordVersion(d.db, {
    collectionId: c.id,
    name: u.name,
    userId: p.userId,
    visibility: u.visibility,
    metadata,
    updateExisting: u.updateExisting,
    maxTotal: Math.floor(c.max_total_size_gb * GIB),
    mayReplace: (f) => canSeeFile(p, c, f) && (f.owner_id === p.userId || f.visibility === 'shared'),
    v: { versionId, object, size: info.size, sha256: info.sha256, contentType, text },
  }).catch(async (err: unknown) => {
    await dropObject(d, object)
    throw err
  })
  if ('refused' in out) {
    await dropObject(d, object)
    if (out.refused === 'over_total') throw collectionFull()
    throw new AppError(
      409,
      'file.exists',
      `a file named ${u.name} already exists in ${c.namespace}/${c.name}${out.refused === 'exists' ? ' (update_existing is false)' : ' and is not yours to replace'}`,
    )
  }
  const file = out.file
  d.log.info(
    {
      collection: `${c.namespace}/${c.name}`,
      file: file.id,
      version: file.current_version,
      size: info.size,
      by: p.userId,
    },
    'file version stored',
  )
  if (c.post_upload_function !== null) {
    const input = {
      event: 'file.uploaded',
      collection: { namespace: c.namespace, name: c.name },
      filename: file.name,
      version: file.current_version,
      size_bytes: info.size,
      content_type: contentType,
      hash_sha256: info.sha256,
      file_metadata: file.file_metadata,
      user_id: p.userId,
    }
    // after the fact and asynchronous: a failing post-upload function never undoes the upload
    await runCollectionFunction(d, p, c, c.post_upload_function, input, 'async').catch((err: unknown) =>
      d.log.warn({ err, collection: `${c.namespace}/${c.name}` }, 'post_upload_function could not be started'),
    )
  }
  return toFileRecord(c, file, await versionsOf(d.db, [file.id]))
}

type Verdict =
  | { action: 'approve' }
  | { action: 'reject'; reason: string }
  | { action: 'modify'; bytes?: Buffer; metadata?: Record<string, unknown>; contentType?: string }

/**
 * The content filter: a function job run in a sandbox before the version is recorded. Input
 * `{filename, content_type, size_bytes, content_base64, text, file_metadata, collection, user_id}`;
 * it answers `{action: "approve"}`, `{action: "reject", reason?}` or `{action: "modify",
 * content_base64? | content?, file_metadata?, content_type?}`. Anything else, an error or a
 * timeout refuses the upload (fail closed): 502 `file.filter_failed`.
 */
async function contentFilter(
  d: FilesDeps,
  p: Principal,
  c: CollectionRecord,
  f: { name: string; contentType: string; bytes: Buffer; metadata: Record<string, unknown> | undefined },
): Promise<Verdict> {
  const input = {
    filename: f.name,
    content_type: f.contentType,
    size_bytes: f.bytes.length,
    content_base64: f.bytes.toString('base64'),
    text: isTextType(f.contentType) ? storable(f.bytes.toString('utf8')) : null,
    file_metadata: f.metadata ?? {},
    collection: { namespace: c.namespace, name: c.name },
    user_id: p.userId,
  }
  const out = await runCollectionFunction(d, p, c, c.content_filter_function as string, input, 'sync')
  const failed = (why: string) =>
    new AppError(502, 'file.filter_failed', `the content filter ${String(c.content_filter_function)} ${why}`)
  if (out === undefined) throw failed('did not run')
  if (out.status !== 'success') throw failed(`failed: ${out.error}`)
  const r = out.result
  if (typeof r !== 'object' || r === null || Array.isArray(r)) throw failed('answered no {action}')
  const o = r as Record<string, unknown>
  if (o['action'] === 'approve') return { action: 'approve' }
  if (o['action'] === 'reject')
    return { action: 'reject', reason: typeof o['reason'] === 'string' ? o['reason'].slice(0, 1000) : '' }
  if (o['action'] !== 'modify') throw failed(`answered an unknown action ${JSON.stringify(o['action'])}`)
  const v: Verdict & { action: 'modify' } = { action: 'modify' }
  if (typeof o['content_base64'] === 'string') v.bytes = Buffer.from(o['content_base64'], 'base64')
  else if (typeof o['content'] === 'string') v.bytes = Buffer.from(o['content'], 'utf8')
  if (o['file_metadata'] !== undefined) {
    if (typeof o['file_metadata'] !== 'object' || o['file_metadata'] === null || Array.isArray(o['file_metadata']))
      throw failed('answered file_metadata that is not an object')
    v.metadata = o['file_metadata'] as Record<string, unknown>
  }
  if (typeof o['content_type'] === 'string' && o['content_type'] !== '' && o['content_type'].length <= 255)
    v.contentType = o['content_type']
  return v
}
