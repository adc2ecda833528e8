import { Type as T, type Static, type TArray, type TOptional } from '@sinclair/typebox'
import { checkEnvelope } from './check-envelope.ts'
import type { ParsedDocument } from './parse-document.ts'
import { sectionKinds, type SectionName } from './section-kinds.ts'

/** One resource of a section: the fields of its API body. Checked against its kind's spec later, not here. */
export const ResourceBody = T.Record(T.String(), T.Unknown(), {
  description: "one resource: the API's field names and values",
})
const Section = T.Array(ResourceBody)

const sections = Object.fromEntries(Object.keys(sectionKinds).map((s) => [s, T.Optional(Section)])) as Record<
  SectionName,
  TOptional<TArray<typeof ResourceBody>>
>

/** A declarative config: `apiVersion: platform/v1`, `kind: PlatformConfig`, metadata, and spec sections (all optional). */
export const ConfigDocument = T.Object(
  {
    apiVersion: T.Literal('platform/v1'),
    kind: T.Literal('PlatformConfig'),
    metadata: T.Optional(
      T.Object({ name: T.String(), description: T.Optional(T.String()) }, { additionalProperties: false }),
    ),
    spec: T.Object(sections, { additionalProperties: false }),
  },
  { additionalProperties: false },
)
export type ConfigDocument = Static<typeof ConfigDocument>

/** The envelope of a parsed config, checked; unknown keys are named with their line and column. */
export function validateConfigDocument(doc: ParsedDocument, value: unknown = doc.value): ConfigDocument {
  checkEnvelope(ConfigDocument, doc, value)
  return value as ConfigDocument
}
