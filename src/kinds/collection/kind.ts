import { CollectionSpec } from '../../../schemas/collection.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * Collections: versioned file storage. The kind holds the settings; the files, their
 * versions and the blobs are src/files/ (migration 0010). Deleting a collection cascades to its
 * files in Postgres, and the blobs follow through the garbage table's sweeper.
 */
export const collectionKind = defineKind({
  kind: 'collection',
  plural: 'collections',
  title: 'Collection',
  description: 'Versioned file storage with metadata validation, content filters and post-upload processing.',
  spec: CollectionSpec,
  refs: (s) => [
    ...(s.content_filter_function === null ? [] : [{ kind: 'function', ref: s.content_filter_function }]),
    ...(s.post_upload_function === null ? [] : [{ kind: 'function', ref: s.post_upload_function }]),
  ],
  // a metadata_schema that is not a usable JSON Schema is refused on save, not at the first upload
  validate: (s) => schemaIssues('metadata_schema', s.metadata_schema),
})
