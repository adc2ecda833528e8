import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { FILE_NAME_PATTERN } from '../../schemas/collection.ts'
import { NAME_PATTERN } from '../../schemas/common.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import { blockedReason, normalizeHost } from '../platform/outbound-http.ts'

/*
 * Icons of agents and functions.
 *
 * On save (`iconIssues`, from the kinds' `validate`): `url:<https URL>` must pass the guarded
 * outbound rules that apply without connecting — HTTPS, no credentials in the URL, no
 * private/loopback/link-local/… address literal, no `localhost`/`.local`/`.internal` name, and a
 * name that resolves must not resolve to such an address. The platform never fetches an icon (the
 * client's browser does), so a name that does not resolve right now is accepted.
 * `collection:<namespace>/<collection>/<filename>` must name a file the way the API does.
 *
 * On read (`iconResolver`, a record decorator of the resource routes): every record with an icon
 * gains `icon_url`: the URL itself for `url:`; for `collection:`, a signed `/files/_signed/…` URL
 * (FILES_ICON_URL_SECONDS) that needs no Authorization header, when the resource's owner can see
 * the file themselves — their own private file, or a shared file of a collection they may read —
 * else null (missing file, someone else's private file, a collection the owner cannot read).
 * Icons of "public collection files" could have a direct URL, but collections have no public files (`shared`
 * means readers of the collection), and the direct `/files/…` URL needs a bearer token an <img>
 * cannot send, so shared files are signed as well.
 */
const NAME = new RegExp(NAME_PATTERN)
const FILE = new RegExp(FILE_NAME_PATTERN)
const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain)$/

export function parseCollectionIcon(path: string): { namespace: string; collection: string; filename: string } | null {
  const [namespace, collection, ...rest] = path.split('/')
  const filename = rest.join('/')
  if (
    namespace === undefined ||
    collection === undefined ||
    !NAME.test(namespace) ||
    !NAME.test(collection) ||
    !FILE.test(filename)
  )
    return null
  return { namespace, collection, filename }
}

export async function iconIssues(path: string, icon: string | null | undefined): Promise<FieldIssue[]> {
  if (icon === null || icon === undefined) return []
  const bad = (message: string): FieldIssue[] => [{ path, message }]
  if (icon.startsWith('collection:'))
    return parseCollectionIcon(icon.slice('collection:'.length)) === null
      ? bad('collection icons are collection:<namespace>/<collection>/<filename>')
      : []
  if (!icon.startsWith('url:'))
    return bad('an icon is url:<https URL> or collection:<namespace>/<collection>/<filename>')
  let url: URL
  try {
    url = new URL(icon.slice(4))
  } catch {
    return bad('not a valid URL')
  }
  if (url.protocol !== 'https:') return bad('icon URLs must use HTTPS')
  if (url.username !== '' || url.password !== '') return bad('icon URLs must not carry credentials')
  const host = normalizeHost(url.hostname)
  if (host === '' || LOCAL_NAMES.test(host)) return bad(`host ${host || '(none)'} is not a public host`)
  if (isIP(host) !== 0) {
    const reason = blockedReason(host)
    return reason === null ? [] : bad(`host ${host} is a non-public address (${reason})`)
  }
  const addresses = await Promise.race([
    lookup(host, { all: true, verbatim: true }).catch(() => []),
    new Promise<[]>((resolve) => setTimeout(() => resolve([]), 1000).unref()),
  ])
  for (const a of addresses) {
    const reason = blockedReason(a.address)
    if (reason !== null) return bad(`host ${host} resolves to a non-public address (${reason})`)
  }
  return []
}
