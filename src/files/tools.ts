import type { Principal } from '../auth/principal.ts'
import { expandAndLoad, toolName, type Tool, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { createLogger, logLevelOf } from '../kernel/log.ts'
import { AppError } from '../kernel/errors.ts'
import { collectionKind } from '../kinds/collection/kind.ts'
import { openBlobStore } from '../platform/blob-store.ts'
import {
  canChangeFile,
  canSeeFile,
  collectionFor,
  fileNotFound,
  readableCollection,
  writableCollection,
  type CollectionRecord,
} from './access.ts'
import type { FilesDeps } from './functions.ts'
import { searchCollection } from './search.ts'
import { deleteFile, fileByName, versionOf } from './store.ts'
import { checkFileName, isTextType, writeBytes } from './upload.ts'

/*
 * Agent tools over collections (an agent's enabled_collections): for every
 * collection the agent enables, `search_collection__{ns}__{name}` (search, or list without a
 * query) and `get_file__…` (read); with `access: readwrite` also `write_file__…`, `edit_file__…`
 * and `delete_file__…`. Discovery expands wildcards like the other providers (the chat user's
 * read permission, the agent owner's namespaces); every call checks the chat user's permission on
 * the collection and the file again when it runs (a readwrite entry never grants more than the
 * user holds), and writes go through the same path as uploads (names, metadata schema, content
 * filter, limits).
 */
type Access = 'readonly' | 'readwrite'

const MIME_BY_EXT: Record<string, string> = {
  md: 'text/markdown',
  txt: 'text/plain',
  json: 'application/json',
  csv: 'text/csv',
  html: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
}
const guessType = (name: string): string => MIME_BY_EXT[name.split('.').pop()?.toLowerCase() ?? ''] ?? 'text/plain'

const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string') throw new AppError(422, 'request.invalid', `${what} must be a string`)
  return v
}

function filesDeps(d: ToolDeps): FilesDeps {
  return {
    db: d.db,
    config: d.config,
    resources: d.resources,
    blobs: () => openBlobStore(d.invoke.nc, d.invoke.names),
    invoke: d.invoke,
    log: createLogger({ level: logLevelOf(d.config), svc: 'files-tools' }),
  }
}

function collectionTools(d: ToolDeps) {
  const f = filesDeps(d)
  return (c: { namespace: string; name: string }, access: Access): Tool[] => {
    const ref = `${c.namespace}/${c.name}`
    const base = { requiresApproval: false, ref: { namespace: c.namespace, name: c.name } }
    const readable = (p: Principal) => readableCollection(d.resources, p, c.namespace, c.name)
    const visible = async (p: Principal, col: CollectionRecord, name: string) => {
      const file = await fileByName(d.db, col.id, name)
      if (file === null || !canSeeFile(p, col, file)) throw fileNotFound(col, name)
      return file
    }
    const readText = async (p: Principal, name: string, version?: number) => {
      const col = await collectionFor(d.resources, p, c.namespace, c.name, 'download')
      const file = await visible(p, col, name)
      const v = await versionOf(d.db, file.id, version ?? file.current_version)
      if (v === null) throw fileNotFound(col, `${name} version ${String(version)}`)
      return { col, file, v }
    }
    const tools: Tool[] = [
      {
        ...base,
        name: toolName('search_collection__', c.namespace, c.name),
        description: `Search the files of collection ${ref} by name, metadata and text content; without a query, list its files`,
        parameters: {
          type: 'object',
          properties: {
            query: { type: 'string', description: 'text to look for (case-insensitive)' },
            metadata_filter: { type: 'object', description: 'files whose metadata contains these key/values' },
            limit: { type: 'integer', minimum: 1, maximum: 200 },
          },
        },
        async run(args, ctx) {
          const col = await readable(ctx.principal)
          const q = typeof args['query'] === 'string' ? args['query'] : undefined
          const filter =
            typeof args['metadata_filter'] === 'object' &&
            args['metadata_filter'] !== null &&
            !Array.isArray(args['metadata_filter'])
              ? (args['metadata_filter'] as Record<string, unknown>)
              : undefined
          const limit = typeof args['limit'] === 'number' ? Math.max(1, Math.min(200, Math.floor(args['limit']))) : 20
          return {
            results: await searchCollection(d.db, ctx.principal, col, {
              ...(q === undefined ? {} : { query: q }),
              ...(filter === undefined ? {} : { metadata_filter: filter }),
              limit,
            }),
          }
        },
      },
      {
        ...base,
        name: toolName('get_file__', c.namespace, c.name),
        description: `Read a file of collection ${ref} (text files; binary files are described, not shown)`,
        parameters: {
          type: 'object',
          properties: { filename: { type: 'string' }, version: { type: 'integer', minimum: 1 } },
          required: ['filename'],
        },
        async run(args, ctx) {
          const { file, v } = await readText(
            ctx.principal,
            str(args['filename'], 'filename'),
            typeof args['version'] === 'number' ? args['version'] : undefined,
          )
          const about = {
            filename: file.name,
            version: v.version,
            content_type: v.content_type,
            size_bytes: v.size_bytes,
            file_metadata: file.file_metadata,
          }
          if (!isTextType(v.content_type)) return { ...about, content: null, note: 'binary file: content not shown' }
          const max = d.config.FILES_TOOL_READ_MAX_CHARS
          const bytes = await (await f.blobs()).readAll(v.object_name, max * 4)
          const text = bytes === null ? null : bytes.toString('utf8')
          if (text === null) return { ...about, content: null, note: `larger than ${String(max)} characters: not read` }
          return text.length > max
            ? { ...about, content: text.slice(0, max), _truncated: true, returned: max, total: text.length }
            : { ...about, content: text }
        },
      },
    ]
    if (access !== 'readwrite') return tools
    const write = async (
      p: Principal,
      name: string,
      content: string,
      contentType: string,
      metadata: Record<string, unknown> | undefined,
    ) => {
      const col = await collectionFor(d.resources, p, c.namespace, c.name, 'upload')
      const rec = await writeBytes(f, p, col, checkFileName(name), Buffer.from(content, 'utf8'), contentType, {
        visibility: undefined,
        metadata,
        updateExisting: true,
      })
      return { filename: rec.name, version: rec.current_version, size_bytes: rec.size_bytes }
    }
    tools.push(
      {
        ...base,
        name: toolName('write_file__', c.namespace, c.name),
        description: `Create a file in collection ${ref}, or store a new version of it (text content)`,
        parameters: {
          type: 'object',
          properties: { filename: { type: 'string' }, content: { type: 'string' }, file_metadata: { type: 'object' } },
          required: ['filename', 'content'],
        },
        async run(args, ctx) {
          const name = str(args['filename'], 'filename')
          const meta =
            typeof args['file_metadata'] === 'object' &&
            args['file_metadata'] !== null &&
            !Array.isArray(args['file_metadata'])
              ? (args['file_metadata'] as Record<string, unknown>)
              : undefined
          return write(ctx.principal, name, str(args['content'], 'content'), guessType(name), meta)
        },
      },
      {
        ...base,
        name: toolName('edit_file__', c.namespace, c.name),
        description: `Replace one exact piece of text in a text file of collection ${ref} (stored as a new version)`,
        parameters: {
          type: 'object',
          properties: { filename: { type: 'string' }, old_text: { type: 'string' }, new_text: { type: 'string' } },
          required: ['filename', 'old_text', 'new_text'],
        },
        async run(args, ctx) {
          const name = str(args['filename'], 'filename')
          const oldText = str(args['old_text'], 'old_text')
          const { file, v } = await readText(ctx.principal, name)
          if (!isTextType(v.content_type)) return { error: `${name} is not a text file` }
          const bytes = await (await f.blobs()).readAll(v.object_name, d.config.FILES_TEXT_INDEX_MAX_BYTES)
          if (bytes === null) return { error: `${name} is too large to edit here` }
          const text = bytes.toString('utf8')
          const count = oldText === '' ? 0 : text.split(oldText).length - 1
          if (count !== 1)
            return { error: `old_text must occur exactly once in ${name} (found ${String(count)} times)` }
          return write(
            ctx.principal,
            name,
            text.replace(oldText, () => str(args['new_text'], 'new_text')),
            v.content_type,
            file.file_metadata,
          )
        },
      },
      {
        ...base,
        name: toolName('delete_file__', c.namespace, c.name),
        description: `Delete a file (every version) from collection ${ref}`,
        parameters: { type: 'object', properties: { filename: { type: 'string' } }, required: ['filename'] },
        async run(args, ctx) {
          const name = str(args['filename'], 'filename')
          const col = await writableCollection(d.resources, ctx.principal, c.namespace, c.name)
          const file = await visible(ctx.principal, col, name)
          if (!canChangeFile(ctx.principal, col, file)) return { error: `not allowed to delete ${name}` }
          await deleteFile(d.db, file.id)
          return { deleted: name }
        },
      },
    )
    return tools
  }
}

/** The file tools of the collections an agent enables (the files feature's `tools`). */
export function fileToolProvider(d: ToolDeps): ToolProvider {
  const make = collectionTools(d)
  return {
    name: 'collections',
    async discover(ctx) {
      const entries = ctx.agent.enabled_collections
      if (entries.length === 0) return []
      // the widest access any matching entry gives (a plain string is read-only)
      const byRef = new Map<string, { namespace: string; name: string; access: Access }>()
      for (const access of ['readonly', 'readwrite'] as const) {
        const patterns = entries
          .filter((e) => (typeof e === 'string' ? access === 'readonly' : e.access === access))
          .map((e) => (typeof e === 'string' ? e : e.collection))
        for (const c of await expandAndLoad(d, ctx.principal, ctx.agent, collectionKind, patterns))
          byRef.set(`${c.namespace}/${c.name}`, { namespace: c.namespace, name: c.name, access })
      }
      return [...byRef.values()].flatMap((c) => make(c, c.access))
    },
  }
}
