import { Type as T } from '@sinclair/typebox'
import { JsonSchemaObject, Name, Namespace, Nullable, Ref, Timestamp, Uuid } from './common.ts'

/* Collections and files. */

export const CollectionSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    metadata_schema: JsonSchemaObject,
    content_filter_function: T.Union([Ref, T.Null()], {
      default: null,
      description: 'function run before a file is stored: approve, reject or modify it',
    }),
    post_upload_function: T.Union([Ref, T.Null()], {
      default: null,
      description: 'function run (as an async job) after a file is stored',
    }),
    max_file_size_mb: T.Number({
      default: 100,
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      description:
        'per-file limit in MiB (fractions allowed: a collection with a content_filter_function takes at most FILES_CONTENT_FILTER_MAX_BYTES, 0.25 MiB by default)',
    }),
    max_total_size_gb: T.Number({
      default: 10,
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      description: 'collection limit in GiB (every kept version counts)',
    }),
  },
  { additionalProperties: false },
)

/**
 * A file name is one path segment: no `/` or `\`, not `.` or `..`, no control characters, no
 * leading or trailing blanks. Names that break these rules are REFUSED (422), never rewritten,
 * so the name a client sees is the name it sent. Blobs are stored under ids, never under names.
 */
export const FILE_NAME_PATTERN = '^(?!\\.{1,2}$)(?![ ])(?!.*[ ]$)[^/\\\\\\u0000-\\u001f\\u007f]{1,255}$'
export const FileName = T.String({
  pattern: FILE_NAME_PATTERN,
  minLength: 1,
  maxLength: 255,
  description: 'one path segment: no / or \\, not . or .., no control characters',
})
export const Visibility = T.Union([T.Literal('private'), T.Literal('shared')], {
  description: '`private`: the uploader only; `shared`: everyone with `:all` read access to the collection',
})

export const CollectionParams = T.Object({ namespace: Namespace, collection: Name })
export const FileParams = T.Object({ namespace: Namespace, collection: Name, filename: FileName })
export const SignedParams = T.Object({
  token: T.String({ minLength: 16, maxLength: 2048, pattern: '^[A-Za-z0-9._-]+$' }),
})

export const FileVersion = T.Object(
  {
    version: T.Integer(),
    size_bytes: T.Integer(),
    hash_sha256: T.String(),
    content_type: T.String(),
    uploaded_by: Nullable(Uuid),
    created_at: Timestamp,
  },
  { title: 'FileVersion' },
)
export const FileRecord = T.Object(
  {
    id: Uuid,
    namespace: Name,
    collection: Name,
    name: T.String(),
    content_type: T.String(),
    current_version: T.Integer(),
    size_bytes: T.Integer({ description: 'size of the current version' }),
    file_metadata: T.Record(T.String(), T.Unknown()),
    visibility: Visibility,
    owner_id: Nullable(Uuid),
    created_at: Timestamp,
    updated_at: Timestamp,
    versions: T.Array(FileVersion),
  },
  { title: 'FileRecord' },
)

/** JSON upload (small files; the body is bounded by HTTP_MAX_BODY_BYTES). Large files: multipart or a raw body. */
export const FileUploadJson = T.Object(
  {
    name: FileName,
    content_base64: T.String({ maxLength: 64 * 1024 * 1024, pattern: '^[A-Za-z0-9+/=\\s]*$' }),
    content_type: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
    visibility: T.Optional(Visibility),
    file_metadata: T.Optional(T.Record(T.String(), T.Unknown())),
    update_existing: T.Optional(
      T.Boolean({
        description: 'default true: a new version of an existing file; false answers 409 when the name exists',
      }),
    ),
  },
  { additionalProperties: false, title: 'FileUploadJson' },
)
/**
 * Query of a streamed upload. multipart/form-data: fields `name`, `visibility`, `file_metadata`
 * (JSON text), `update_existing` BEFORE the `file` part; the query keys are used when a field is
 * absent. Any other content type: the raw body is the file and `name` is required here.
 */
export const FileUploadQuery = T.Object(
  {
    name: T.Optional(FileName),
    visibility: T.Optional(Visibility),
    file_metadata: T.Optional(T.String({ maxLength: 65536, description: 'JSON object' })),
    update_existing: T.Optional(T.Boolean()),
  },
  { additionalProperties: false },
)
export const FileListQuery = T.Object(
  {
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
    prefix: T.Optional(T.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
)
export const FileDownloadQuery = T.Object(
  { version: T.Optional(T.Integer({ minimum: 1 })) },
  { additionalProperties: false },
)
export const FilePatchBody = T.Object(
  { file_metadata: T.Optional(T.Record(T.String(), T.Unknown())), visibility: T.Optional(Visibility) },
  { additionalProperties: false, title: 'FilePatch' },
)
export const FileSearchBody = T.Object(
  {
    query: T.Optional(
      T.String({
        maxLength: 1000,
        description: 'case-insensitive text looked for in file names and in the content of text files',
      }),
    ),
    metadata_filter: T.Optional(
      T.Record(T.String(), T.Unknown(), { description: 'files whose metadata contains these key/values (jsonb @>)' }),
    ),
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 200, default: 20 })),
  },
  { additionalProperties: false, title: 'FileSearch' },
)
export const FileSearchHit = T.Object({
  filename: T.String(),
  version: T.Integer(),
  matches: T.Array(T.Object({ line: T.Integer(), text: T.String() })),
})
export const FileUrlBody = T.Object(
  {
    expires_in: T.Optional(
      T.Integer({
        minimum: 1,
        description: 'seconds (default FILES_SIGNED_URL_SECONDS, at most FILES_SIGNED_URL_MAX_SECONDS)',
      }),
    ),
    version: T.Optional(T.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)
export const FileUrl = T.Object({ url: T.String(), expires_in: T.Integer(), version: T.Integer() })

/** What a download route answers the gateway (never the client): the blob to stream (gateway/blob-transfer.ts). */
export const BlobDownload = T.Object({
  blob: T.Object({
    object: T.String(),
    size: T.Integer({ minimum: 0 }),
    content_type: T.String(),
    filename: T.String(),
    sha256: T.String(),
    version: T.Integer(),
  }),
})
/** What the prepare phase of a streamed upload answers the gateway. */
export const BlobUploadPlan = T.Object({ object: T.String(), max_bytes: T.Integer({ minimum: 0 }) })
