import { Type as T } from '@sinclair/typebox'
import {
  CollectionParams,
  FileDownloadQuery,
  FileListQuery,
  FileParams,
  FilePatchBody,
  FileRecord,
  FileSearchBody,
  FileSearchHit,
  FileUploadJson,
  FileUploadQuery,
  FileUrl,
  FileUrlBody,
  SignedParams,
} from '../../schemas/collection.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The runtime file endpoints of SPEC.md §4.8 (shapes in schemas/collection.ts, wire in WIRE.md "Files"). */
const r = { surface: 'runtime', auth: true, target: 'rpc' } as const
const tags = ['Files']
const base = '/files/{namespace}/{collection}'
const one = `${base}/{filename}`

export const FILE_ROUTES = {
  upload: defineRoute({
    ...r,
    tags,
    id: 'files.upload',
    method: 'POST',
    path: base,
    summary:
      'Upload a file (a new version when the name exists). JSON `{name, content_base64, …}` for small files (HTTP_MAX_BODY_BYTES); multipart/form-data (fields, then the `file` part) or a raw body with `?name=` streams to the object store, limited by max_file_size_mb and max_total_size_gb while streaming (413 `file.too_large`)',
    blob: 'upload',
    params: CollectionParams,
    query: FileUploadQuery,
    body: FileUploadJson,
    response: FileRecord,
    status: 201,
    errors: [403, 404, 409, 413, 422],
  }),
  list: defineRoute({ ...r, tags, id: 'files.list', method: 'GET', path: base, summary: 'Files of a collection the caller may see', params: CollectionParams, query: FileListQuery, response: T.Array(FileRecord), errors: [404] }),
  download: defineRoute({
    ...r,
    tags,
    id: 'files.download',
    method: 'GET',
    path: one,
    summary: 'Download a file (the bytes, streamed); `?version=N` for an earlier version',
    blob: 'download',
    params: FileParams,
    query: FileDownloadQuery,
    errors: [404],
  }),
  info: defineRoute({ ...r, tags, id: 'files.info', method: 'GET', path: `${one}/info`, summary: 'A file record with its versions', params: FileParams, response: FileRecord, errors: [404] }),
  update: defineRoute({ ...r, tags, id: 'files.update', method: 'PATCH', path: one, summary: 'Update metadata (validated against metadata_schema) or visibility', params: FileParams, body: FilePatchBody, response: FileRecord, errors: [403, 404, 422] }),
  delete: defineRoute({ ...r, tags, id: 'files.delete', method: 'DELETE', path: one, summary: 'Delete a file with every version (the blobs follow)', params: FileParams, status: 204, errors: [403, 404] }),
  url: defineRoute({
    ...r,
    tags,
    id: 'files.url',
    method: 'POST',
    path: `${one}/url`,
    summary: 'A temporary download URL for one version (no Authorization needed; expires)',
    params: FileParams,
    body: FileUrlBody,
    response: FileUrl,
    errors: [404],
  }),
  search: defineRoute({ ...r, tags, id: 'files.search', method: 'POST', path: `${base}/search`, summary: 'Search by file name, metadata and the content of text files', params: CollectionParams, body: FileSearchBody, response: T.Array(FileSearchHit), errors: [404] }),
  signed: defineRoute({
    surface: 'runtime',
    auth: false,
    target: 'rpc',
    tags,
    id: 'files.signed',
    method: 'GET',
    // `_signed` cannot be a namespace (names start with a letter or digit)
    path: '/files/_signed/{token}',
    summary: 'Download through a temporary URL (POST …/url): the token names one file version and its expiry',
    blob: 'download',
    params: SignedParams,
    errors: [404],
  }),
}

export const fileRoutes = (): RouteDef[] => Object.values(FILE_ROUTES)
