import { api } from './client.ts'

/*
 * The platform's management OpenAPI document, loaded once: the resource forms are built from the
 * JSON schemas of its create and update bodies (the same TypeBox schemas that validate requests).
 */
export type JsonSchema = {
  type?: string | string[]
  title?: string
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  enum?: unknown[]
  const?: unknown
  default?: unknown
  format?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  additionalProperties?: boolean | JsonSchema
  patternProperties?: Record<string, JsonSchema>
  [key: string]: unknown
}

interface Operation {
  requestBody?: { content?: { 'application/json'?: { schema?: JsonSchema } } }
  responses?: Record<string, { content?: { 'application/json'?: { schema?: JsonSchema } } }>
}
interface Document {
  paths: Record<string, Record<string, Operation>>
}

let doc: Promise<Document> | undefined

/** The management document (`/api/v1/openapi.json`), fetched once per page load. */
export function managementDocument(): Promise<Document> {
  doc ??= api<Document>('GET', '/openapi.json').catch((e: unknown) => {
    doc = undefined
    throw e
  })
  return doc
}

/** The JSON body schema of an operation (`POST /api/v1/skills`), if it has one. */
export async function bodySchema(method: string, path: string): Promise<JsonSchema | undefined> {
  const d = await managementDocument()
  return d.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema
}
