import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { currentPackagesDir, installApprovedPackages } from '../../src/dependencies/installer.ts'
import { createLogger } from '../../src/kernel/log.ts'
import type { Db } from '../../src/platform/db.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Python package dependencies (src/dependencies/): a user requests, an admin approves, the
 * installer runs the system pip against a local wheel directory built here (PyPI is not used), and
 * a sandboxed function imports the package. Also: the name/version checks (they become pip
 * arguments), ALLOW_PACKAGE_INSTALLATION and ALLOWED_PACKAGES, and how failures are recorded.
 */
const log = createLogger({ level: 'silent' })

/** Writes a pure-Python wheel `<name>-<version>-py3-none-any.whl` into `dir`. */
function buildWheel(
  dir: string,
  name: string,
  version: string,
  files: Record<string, string>,
  requires: string[] = [],
): void {
  const script = `
import base64, hashlib, json, sys, zipfile
out, name, version, files, requires = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5])
info = f"{name}-{version}.dist-info"
files = {k: v.encode() for k, v in files.items()}
files[f"{info}/METADATA"] = ("Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (name, version) + "".join("Requires-Dist: %s\\n" % r for r in requires)).encode()
files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
record = "".join("%s,sha256=%s,%d\\n" % (k, base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode(), len(v)) for k, v in files.items())
with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
    for k, v in files.items():
        z.writestr(k, v)
    z.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\\n")
`
  execFileSync('/usr/bin/python3', ['-c', script, dir, name, version, JSON.stringify(files), JSON.stringify(requires)])
}

const index = mkdtempSync(join(tmpdir(), 'wheels-'))
buildWheel(index, 'mypkg', '1.0.0', { 'mypkg/__init__.py': 'VALUE = 42\n' })
buildWheel(index, 'helperdep', '1.0', { 'helperdep/__init__.py': 'NAME = "helper"\n' })
buildWheel(index, 'withdep', '2.0', { 'withdep/__init__.py': 'from helperdep import NAME\n' }, ['helperdep>=1.0'])
// Sandboxes run under other uids (bubblewrap as root): the packages root must be world-traversable.
const packagesDir = mkdtempSync(join(tmpdir(), 'packages-'))
chmodSync(packagesDir, 0o755)
t.teardown(() => {
  rmSync(index, { recursive: true, force: true })
  rmSync(packagesDir, { recursive: true, force: true })
})

const env = await startTestPlatform(t, { PACKAGE_INDEX_DIR: index, PACKAGES_DIR: packagesDir })
const db = env.platform.db as Db
const user = await env.createUser('deps-user@test.local')

interface Dep {
  id: string
  package_name: string
  version: string | null
  status: string
  error: string | null
  requested_by: string | null
  approved_by: string | null
}
const request = async (token: string, body: unknown) => env.request('POST', '/api/v1/dependencies', { token, body })
// the requester follows its request by id (the list is the admin's)
const row = async (id: string): Promise<Dep> =>
  (await env.request('GET', `/api/v1/dependencies/${id}`, { token: user.token })).body as Dep

t.test('a user requests, only the admin approves, the installer installs', async (t) => {
  const res = await request(user.token, { package_name: 'MyPkg', version: '1.0.0' })
  t.equal(res.status, 201, res.text)
  const dep = res.body as Dep
  t.match(
    dep,
    { package_name: 'mypkg', version: '==1.0.0', status: 'pending', requested_by: user.id, approved_by: null },
    'normalized name, bare version means ==',
  )
  t.equal((await request(user.token, { package_name: 'MYPKG' })).status, 409, 'one row per normalized name')

  t.equal(
    (await env.request('POST', `/api/v1/dependencies/${dep.id}/approve`, { token: user.token })).status,
    403,
    'a user cannot approve',
  )
  t.equal(
    (await env.request('DELETE', `/api/v1/dependencies/${dep.id}`, { token: user.token })).status,
    403,
    'nor delete',
  )
  t.equal(
    (await installApprovedPackages({ db, config: env.config, log })).dir,
    undefined,
    'nothing approved, nothing installed',
  )

  const approved = await env.request('POST', `/api/v1/dependencies/${dep.id}/approve`)
  t.equal(approved.status, 200, approved.text)
  t.match(approved.body, { status: 'approved', approved_by: env.adminId })

  const first = await installApprovedPackages({ db, config: env.config, log })
  t.same(first.installed, ['mypkg'])
  t.same(first.failed, [])
  const dir = first.dir as string
  t.ok(dir.startsWith(packagesDir), 'installed below PACKAGES_DIR')
  t.ok(existsSync(join(dir, 'mypkg', '__init__.py')), 'the package is in the set directory')
  t.equal(statSync(join(dir, 'mypkg', '__init__.py')).mode & 0o004, 0o004, 'world-readable')
  t.equal(statSync(join(dir, 'mypkg')).mode & 0o005, 0o005, 'world-traversable')
  t.equal(currentPackagesDir(env.config), dir, 'current points at the new set')
  t.equal((await row(dep.id)).status, 'installed')

  const again = await installApprovedPackages({ db, config: env.config, log })
  t.equal(again.dir, dir, 'the same set reuses its directory')
})

t.test('names and version specs are checked strictly (they become pip arguments)', async (t) => {
  const before = (await env.request('GET', '/api/v1/dependencies')).body as Dep[]
  const names = [
    'x; rm -rf /',
    '--index-url=http://evil',
    '-e.',
    '../etc',
    'a b',
    'pkg\n--pre',
    'pkg@http://evil/x.whl',
    'pkg[extra]',
    'pkg==1.0',
    '.hidden',
    'trailing-',
    ' mypkg',
    '',
  ]
  for (const package_name of names) {
    const res = await request(user.token, { package_name })
    t.equal(res.status, 422, `name ${JSON.stringify(package_name)}: ${res.text}`)
  }
  const versions = [
    '; rm -rf /',
    '==1.0 --pre',
    '==1.0,--index-url=http://evil',
    '@ http://evil',
    '==1.0.0\n',
    '1.0; sys_platform',
    '>=1.0 ',
    'latest',
    '==1.0,<2,>0,!=1.5,<3,>=0.1',
  ]
  for (const version of versions) {
    const res = await request(user.token, { package_name: 'fine-name', version })
    t.equal(res.status, 422, `version ${JSON.stringify(version)}: ${res.text}`)
  }
  t.equal(
    ((await env.request('GET', '/api/v1/dependencies')).body as Dep[]).length,
    before.length,
    'nothing was stored',
  )
  const ok = await request(user.token, { package_name: 'Zope.Interface_x', version: '>=1.0,<2.0.*' })
  t.equal(ok.status, 422, 'a wildcard is only allowed with == and !=')
  const good = await request(user.token, { package_name: 'Zope.Interface_x', version: '>=1.0rc1,!=1.5.*,<2' })
  t.equal(good.status, 201, good.text)
  t.match(good.body, { package_name: 'zope-interface-x', version: '>=1.0rc1,!=1.5.*,<2' })
  t.equal((await env.request('DELETE', `/api/v1/dependencies/${(good.body as Dep).id}`)).status, 204)
})

t.test('failures are recorded per package; dependencies come from the same index', async (t) => {
  const missing = (await request(user.token, { package_name: 'nosuchpkg' })).body as Dep
  const withdep = (await request(user.token, { package_name: 'withdep', version: '==2.0' })).body as Dep
  const rejected = (await request(user.token, { package_name: 'helperdep' })).body as Dep
  for (const d of [missing, withdep])
    t.equal((await env.request('POST', `/api/v1/dependencies/${d.id}/approve`)).status, 200)
  t.match((await env.request('POST', `/api/v1/dependencies/${rejected.id}/reject`)).body, { status: 'rejected' })

  const res = await installApprovedPackages({ db, config: env.config, log })
  t.same(res.installed.sort(), ['mypkg', 'withdep'])
  t.same(
    res.failed.map((f) => f.name),
    ['nosuchpkg'],
  )
  t.match(res.failed[0]?.error, /No matching distribution found for nosuchpkg/)
  t.ok(
    existsSync(join(res.dir as string, 'helperdep', '__init__.py')),
    'the dependency of withdep was resolved from the local index',
  )
  const failedRow = await row(missing.id)
  t.equal(failedRow.status, 'failed')
  t.match(failedRow.error, /nosuchpkg/)
  t.equal(
    (await row(rejected.id)).status,
    'rejected',
    'a rejected request stays rejected (helperdep came in as a dependency of withdep)',
  )

  // the installer re-checks the configuration
  const narrowed = await installApprovedPackages({ db, config: { ...env.config, ALLOWED_PACKAGES: 'mypkg' }, log })
  t.same(narrowed.installed, ['mypkg'])
  t.match(narrowed.failed, [{ name: 'withdep', error: /not in ALLOWED_PACKAGES/ }])
  const noIndex = await installApprovedPackages({ db, config: { ...env.config, PACKAGE_INDEX_DIR: '' }, log })
  t.equal(noIndex.dir, undefined)
  t.match(noIndex.failed, [{ name: 'mypkg', error: /PACKAGE_INDEX_DIR is not set/ }])
  t.equal(currentPackagesDir(env.config), undefined, 'nothing installed, no current set')

  // re-approving the failed packages and installing again restores the set
  const failedNow = (await env.request('GET', '/api/v1/dependencies?status=failed')).body as Dep[]
  t.same(
    failedNow.map((d) => d.package_name),
    ['mypkg', 'nosuchpkg', 'withdep'],
  )
  t.equal((await env.request('DELETE', `/api/v1/dependencies/${missing.id}`)).status, 204)
  for (const d of failedNow)
    if (d.id !== missing.id) t.equal((await env.request('POST', `/api/v1/dependencies/${d.id}/approve`)).status, 200)
  const restored = await installApprovedPackages({ db, config: env.config, log })
  t.same(restored.installed.sort(), ['mypkg', 'withdep'])
  t.same(restored.failed, [])
})

t.test('a sandboxed function imports an installed package', async (t) => {
  const created = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'deps',
      name: 'usepkg',
      code: 'import mypkg\ndef handler(input, context):\n    return mypkg.VALUE\n',
    },
  })
  t.equal(created.status, 201, created.text)
  const sbx = env.platform.sandboxes
  if (sbx === undefined) throw new Error('no sandbox executor')

  const without = (await env.request('POST', '/functions/deps/usepkg/execute', { body: { input: {} } })).body as {
    status: string
    error: string
  }
  t.equal(without.status, 'error', 'before the install the import fails')
  t.match(without.error, /ModuleNotFoundError: No module named 'mypkg'/)

  const { dir } = await installApprovedPackages({ db, config: env.config, log })
  sbx.setPackagesDir(dir)
  // pool.reload() replaces idle sandboxes only: let one still starting (with the old spec) settle first
  await eventually(
    async () => (sbx.stats().starting === 0 && sbx.stats().in_use === 0 ? true : undefined),
    'a settled pool',
  )
  await sbx.pool?.reload()
  const res = await env.request('POST', '/functions/deps/usepkg/execute', { body: { input: {} } })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { status: 'success', result: 42 })
})

t.test('ALLOWED_PACKAGES and ALLOW_PACKAGE_INSTALLATION refuse requests with 422 dependency.not_allowed', async (t) => {
  const listed = await startTestPlatform(t, { ROLES: 'gateway,resources', ALLOWED_PACKAGES: 'mypkg, Other_Pkg' })
  const u = await listed.createUser('deps-listed@test.local')
  t.equal(
    (await listed.request('POST', '/api/v1/dependencies', { token: u.token, body: { package_name: 'other.pkg' } }))
      .status,
    201,
    'listed (normalized on both sides)',
  )
  const refused = await listed.request('POST', '/api/v1/dependencies', {
    token: u.token,
    body: { package_name: 'requests' },
  })
  t.equal(refused.status, 422)
  t.equal((refused.body as { code: string }).code, 'dependency.not_allowed')

  const off = await startTestPlatform(t, { ROLES: 'gateway,resources', ALLOW_PACKAGE_INSTALLATION: 'false' })
  const v = await off.createUser('deps-off@test.local')
  const disabled = await off.request('POST', '/api/v1/dependencies', {
    token: v.token,
    body: { package_name: 'mypkg' },
  })
  t.equal(disabled.status, 422)
  t.equal((disabled.body as { code: string }).code, 'dependency.not_allowed')
  t.match((disabled.body as { detail: string }).detail, /ALLOW_PACKAGE_INSTALLATION/)
  t.same(
    await installApprovedPackages({ db: off.platform.db as Db, config: off.config, log }),
    { dir: undefined, installed: [], failed: [] },
    'the installer installs nothing',
  )
})
