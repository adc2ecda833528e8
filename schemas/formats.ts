import { FormatRegistry } from '@sinclair/typebox'

/*
 * String formats used by the platform's schemas. TypeBox checks no format until one is registered;
 * importing this module (schemas/common.ts does) registers them once per process.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const EMAIL = /^[^\s@]+@[^\s@]+$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

function isUri(value: string): boolean {
  try {
    const u = new URL(value)
    return u.protocol === 'http:' || u.protocol === 'https:'
  } catch {
    return false
  }
}

function isJson(value: string): boolean {
  try {
    JSON.parse(value)
    return true
  } catch {
    return false
  }
}

const formats: Record<string, (v: string) => boolean> = {
  uuid: (v) => UUID.test(v),
  email: (v) => EMAIL.test(v) && v.length <= 320,
  'date-time': (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)),
  uri: isUri,
  json: isJson,
}

for (const [name, check] of Object.entries(formats)) {
  if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, check)
}
