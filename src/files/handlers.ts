import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import { collectionKind } from '../kinds/collection/kind.ts'
import { forbidden, notFound } from '../kernel/errors.ts'
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
import { toFileRecord } from './records.ts'
import { FILE_ROUTES as R } from './routes.ts'
import { searchCollection } from './search.ts'
import { signFileVersion, verifyFileToken } from './signed-url.ts'
import {
  deleteFile,
  fileById,
  fileByName,
  filesOf,
  updateFile,
  versionById,
  versionOf,
  versionsOf,
  type FileRowT,
  type VersionRowT,
} from './store.ts'
import { abandonUpload, commitUpload, jsonUpload, prepareUpload } from './upload.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { invalid } from '../kernel/errors.ts'
import type { Config } from '../kernel/config.ts'

/*
 * The runtime file endpoints. Uploads arrive in one of three shapes (upload.ts):
 * a JSON body, or the `prepare` and `commit` phases of a body the gateway streamed into the
 * object store. Downloads answer `{blob}` and the gateway streams the object
 * (gateway/blob-transfer.ts), so no file passes through this process whole.
 */

/** Where links the platform hands out point (PUBLIC_BASE_URL, else https://DOMAIN, else relative). */
export const publicBase = (config: Config): string =>
  config.PUBLIC_BASE_URL !== ''
    ? config.PUBLIC_BASE_URL.replace(/\/+$/, '')
    : config.DOMAIN !== ''
      ? `https://${config.DOMAIN}`
      : ''

export const signedPath = (token: string): string => `/files/_signed/${token}`

const blobReply = (f: FileRowT, v: VersionRowT) => ({
  body: {
    blob: {
      object: v.object_name,
      size: v.size_bytes,
      content_type: v.content_type,
      filename: f.name,
      sha256: v.hash_sha256,
      version: v.version,
    },
  },
})

export function fileHandlers(d: FilesDeps): BoundRoute[] {
  /** The file when the caller may see it (404 otherwise). */
  const visibleFile = async (p: Principal, c: CollectionRecord, name: string): Promise<FileRowT> => {
    const f = await fileByName(d.db, c.id, name)
    if (f === null || !canSeeFile(p, c, f)) throw fileNotFound(c, name)
    return f
  }
  const version = async (c: CollectionRecord, f: FileRowT, n: number | undefined): Promise<VersionRowT> => {
    const v = await versionOf(d.db, f.id, n ?? f.current_version)
    if (v === null)
      throw notFound(`version ${String(n)} of ${f.name} not found in ${c.namespace}/${c.name}`, 'file.not_found')
    return v
  }

  return [
    bind(R.upload, async ({ principal: p, params, query, body, request }) => {
      const at = { namespace: params.namespace, collection: params.collection }
      const blob = request.blob
      if (blob?.phase === 'prepare') return { body: await prepareUpload(d, p, at, blob) }
      if (blob?.phase === 'commit') return { status: 201, body: await commitUpload(d, p, at, query, blob) }
      if (blob?.phase === 'abort') {
        await abandonUpload(d, blob.object)
        return { status: 204 }
      }
      return { status: 201, body: await jsonUpload(d, p, at, body) }
    }),

    bind(R.list, async ({ principal: p, params, query }) => {
      const c = await readableCollection(d.resources, p, params.namespace, params.collection)
      const files = (await filesOf(d.db, c.id, query.prefix)).filter((f) => canSeeFile(p, c, f))
      const offset = query.offset ?? 0
      const page = files.slice(offset, offset + (query.limit ?? 100))
      const versions = await versionsOf(
        d.db,
        page.map((f) => f.id),
      )
      return { body: page.map((f) => toFileRecord(c, f, versions)), headers: { 'x-total-count': String(files.length) } }
    }),

    bind(R.info, async ({ principal: p, params }) => {
      const c = await readableCollection(d.resources, p, params.namespace, params.collection)
      const f = await visibleFile(p, c, params.filename)
      return { body: toFileRecord(c, f, await versionsOf(d.db, [f.id])) }
    }),

    bind(R.download, async ({ principal: p, params, query }) => {
      const c = await collectionFor(d.resources, p, params.namespace, params.collection, 'download')
      const f = await visibleFile(p, c, params.filename)
      return blobReply(f, await version(c, f, query.version))
    }),

    bind(R.update, async ({ principal: p, params, body }) => {
      const c = await writableCollection(d.resources, p, params.namespace, params.collection)
      const f = await visibleFile(p, c, params.filename)
      if (!canChangeFile(p, c, f)) throw forbidden(`not allowed to change ${f.name}`)
      if (body.file_metadata !== undefined) {
        const issues = validateAgainst(c.metadata_schema, body.file_metadata, '/file_metadata')
        if (issues.length > 0)
          throw invalid(
            "file_metadata does not match the collection's metadata_schema",
            issues,
            'file.invalid_metadata',
          )
      }
      const updated = await updateFile(d.db, f.id, {
        ...(body.file_metadata === undefined ? {} : { metadata: body.file_metadata }),
        ...(body.visibility === undefined ? {} : { visibility: body.visibility }),
      })
      return { body: toFileRecord(c, updated, await versionsOf(d.db, [f.id])) }
    }),

    bind(R.delete, async ({ principal: p, params }) => {
      const c = await writableCollection(d.resources, p, params.namespace, params.collection)
      const f = await visibleFile(p, c, params.filename)
      if (!canChangeFile(p, c, f)) throw forbidden(`not allowed to delete ${f.name}`)
      await deleteFile(d.db, f.id)
      d.log.info({ collection: `${c.namespace}/${c.name}`, file: f.id, by: p.userId }, 'file deleted')
      return { status: 204 }
    }),

    bind(R.url, async ({ principal: p, params, body }) => {
      const c = await collectionFor(d.resources, p, params.namespace, params.collection, 'download')
      const f = await visibleFile(p, c, params.filename)
      const v = await version(c, f, body.version)
      const seconds = Math.min(
        body.expires_in ?? d.config.FILES_SIGNED_URL_SECONDS,
        d.config.FILES_SIGNED_URL_MAX_SECONDS,
      )
      const token = await signFileVersion(d.config.SECRET_KEY, v.id, seconds)
      return { body: { url: `${publicBase(d.config)}${signedPath(token)}`, expires_in: seconds, version: v.version } }
    }),

    bind(R.search, async ({ principal: p, params, body }) => {
      const c = await readableCollection(d.resources, p, params.namespace, params.collection)
      return { body: await searchCollection(d.db, p, c, body) }
    }),

    // no caller: the token is the permission, for one version until it expires
    bind(R.signed, async ({ params }) => {
      const gone = () => notFound('this link is invalid or has expired', 'file.not_found')
      const versionId = await verifyFileToken(d.config.SECRET_KEY, params.token)
      if (versionId === null) throw gone()
      const v = await versionById(d.db, versionId)
      const f = v === null ? null : await fileById(d.db, v.file_id)
      if (v === null || f === null) throw gone()
      const c = await d.resources.byId(collectionKind, f.collection_id)
      if (c === null || c.is_active === false) throw gone()
      return blobReply(f, v)
    }),
  ]
}
