import { Type as T, type Static, type TArray, type TOptional } from '@sinclair/typebox'
import { Name } from '../../schemas/common.ts'
import { AppError } from '../kernel/errors.ts'
import { checkEnvelope } from './check-envelope.ts'
import { ResourceBody } from './config-schema.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'
import { PACKAGE_FORBIDDEN_SECTIONS, sectionKinds, type SectionName } from './section-kinds.ts'

/** What a `resource_ref` variable may name. */
export const VARIABLE_RESOURCES = ['llm_providers', 'database_connections', 'collections', 'secrets', 'roles'] as const

/** One install-time variable of a package, referenced in its text as `${{ variables.NAME }}`. */
export const VariableDeclaration = T.Object(
  {
    name: T.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 100 }),
    type: T.Union([
      T.Literal('text'),
      T.Literal('boolean'),
      T.Literal('enum'),
      T.Literal('resource_ref'),
      T.Literal('secret'),
    ]),
    description: T.Optional(T.String()),
    example: T.Optional(T.Unknown()),
    default: T.Optional(T.Unknown()),
    required: T.Optional(T.Boolean()),
    pattern: T.Optional(
      T.String({ description: 'text: a regular expression the value must match (anywhere, as in JSON Schema)' }),
    ),
    choices: T.Optional(T.Array(T.String(), { minItems: 1, description: 'enum: the values allowed' })),
    resource: T.Optional(T.Union(VARIABLE_RESOURCES.map((r) => T.Literal(r)))),
  },
  { additionalProperties: false },
)
export type VariableDeclaration = Static<typeof VariableDeclaration>

/** The sections a package may hold: a config's, less the forbidden ones and secrets (a package makes secrets through `secret` variables). */
export const PACKAGE_SECTIONS = (Object.keys(sectionKinds) as SectionName[]).filter(
  (s) => !PACKAGE_FORBIDDEN_SECTIONS.includes(s) && s !== 'secrets',
)

const sections = Object.fromEntries(PACKAGE_SECTIONS.map((s) => [s, T.Optional(T.Array(ResourceBody))])) as Record<
  SectionName,
  TOptional<TArray<typeof ResourceBody>>
>

/** A package: `apiVersion: platform/v1`, `kind: PlatformPackage`, the package block and spec lists. */
export const PackageDocument = T.Object(
  {
    apiVersion: T.Literal('platform/v1'),
    kind: T.Literal('PlatformPackage'),
    package: T.Object(
      {
        name: Name,
        version: T.String({ minLength: 1, maxLength: 100 }),
        description: T.Optional(T.String()),
        author: T.Optional(T.String()),
        url: T.Optional(T.String()),
      },
      { additionalProperties: false },
    ),
    spec: T.Object(
      { variables: T.Optional(T.Array(VariableDeclaration)), ...sections },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
export type PackageDocument = Static<typeof PackageDocument>

/** The envelope of a parsed package: forbidden sections are refused by name before anything else is checked. */
export function validatePackageDocument(doc: ParsedDocument, value: unknown = doc.value): PackageDocument {
  const spec = (value as { spec?: unknown } | null)?.spec
  if (spec !== null && typeof spec === 'object') {
    const forbidden: DocumentIssue[] = PACKAGE_FORBIDDEN_SECTIONS.filter((s) => s in spec).map((s) =>
      doc.issueAt(['spec', s], `packages may not hold \`${s}\`: only an administrator's config may`),
    )
    if (forbidden.length > 0)
      throw AppError.of(
        'package.forbidden_section',
        `packages may not hold ${forbidden.map((i) => i.path.replace(/^spec\./, '')).join(', ')}`,
        { issues: forbidden },
      )
  }
  checkEnvelope(PackageDocument, doc, value)
  return value as PackageDocument
}
