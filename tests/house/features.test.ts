import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { registeredErrorCodes } from '../../src/kernel/error-codes.ts'
import type { Feature } from '../../src/feature/define.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * One entry per feature, one contribution object, nothing registered on import: importing every
 * feature module leaves the one remaining global registry (the error codes `AppError` reads) as
 * the kernel left it, no source file outside the composition root calls a `register…` function,
 * and everything each feature declares shows up in what the composition root and the roles build.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const SRC = join(ROOT, 'src')

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

const moduleFiles = filesUnder(SRC).filter((f) => f.endsWith('/module.ts') || f.endsWith('-module.ts'))

t.test('importing every feature module registers nothing', async (t) => {
  const before = new Map(registeredErrorCodes())
  const features: Feature[] = []
  for (const file of moduleFiles) {
    const mod = (await import(file)) as Record<string, unknown>
    for (const v of Object.values(mod))
      if (typeof v === 'object' && v !== null && 'name' in v && 'routes' in v) features.push(v as Feature)
  }
  t.ok(features.length >= 20, `found the feature objects (${String(features.length)})`)
  t.same(new Map(registeredErrorCodes()), before, 'the error-code registry is as the kernel filled it')
})

t.test('only the composition root calls a register… function', async (t) => {
  // the kernel's error-code registry is filled from the feature list by src/feature/collect.ts;
  // the process's Prometheus registry holds the platform's metrics, defined in that one module
  const allowed = new Set(['src/kernel/error-codes.ts', 'src/feature/collect.ts', 'src/platform/metrics.ts'])
  const offenders: string[] = []
  for (const file of [...filesUnder(SRC), ...filesUnder(join(ROOT, 'actors'))]) {
    const rel = relative(ROOT, file)
    if (allowed.has(rel)) continue
    const src = readFileSync(file, 'utf8')
    // registerLocalRoute is the RPC server's own subscription bookkeeping, not a registry of contributions
    for (const m of src.matchAll(/\b(register[A-Z]\w*)\s*\(/g))
      if (m[1] !== 'registerLocalRoute' && m[1] !== 'registerFeatureErrorCodes') offenders.push(`${rel}: ${m[1]}`)
  }
  t.same(offenders, [])
})

t.test('every feature is listed once and its contributions reach what the roles build', async (t) => {
  const { FEATURES, KINDS, ACTOR_FACTORIES } = await import('../../src/features.ts')
  const { allRoutes } = await import('../../src/main.ts')
  const { featureComponentProxies, featurePermissions, featureTools } = await import('../../src/feature/collect.ts')
  const names = FEATURES.map((f) => f.name)
  t.same(names, [...new Set(names)], 'feature names are unique')

  // every module's feature is in the list
  for (const file of moduleFiles) {
    const mod = (await import(file)) as Record<string, unknown>
    for (const v of Object.values(mod))
      if (typeof v === 'object' && v !== null && 'name' in v && 'routes' in v)
        t.ok(FEATURES.includes(v as Feature), `${relative(ROOT, file)} is listed in src/features.ts`)
  }

  const routeIds = new Set(allRoutes().map((r) => r.id))
  const tools = featureTools(FEATURES)
  const permissions = featurePermissions(FEATURES)
  const proxies = featureComponentProxies(FEATURES)
  for (const f of FEATURES) {
    for (const r of f.routes({ kinds: KINDS })) t.ok(routeIds.has(r.id), `${f.name}: route ${r.id} is served`)
    for (const k of f.kinds ?? []) t.ok(KINDS.includes(k), `${f.name}: kind ${k.kind} is in KINDS`)
    for (const a of f.actors ?? []) t.ok(ACTOR_FACTORIES.includes(a), `${f.name}: an actor type is hosted`)
    for (const p of f.tools ?? []) t.ok(tools.includes(p), `${f.name}: a tool provider is offered`)
    for (const p of f.permissions ?? []) t.ok(permissions.includes(p), `${f.name}: ${p.permission} is declared`)
    for (const [area, make] of Object.entries(f.componentProxies ?? {}))
      t.equal(proxies[area as keyof typeof proxies], make, `${f.name}: proxy area ${area}`)
  }
  t.ok(KINDS.length > 0 && ACTOR_FACTORIES.length > 0 && tools.length > 0 && permissions.length > 0)

  // what a started platform built from the list: the engine's kinds and the permission reference
  const env = await startTestPlatform(t)
  t.same(
    [...(env.platform.resources?.kinds.keys() ?? [])],
    KINDS.map((k) => k.kind),
    'the resource engine has every kind',
  )
  const ref = await env.request('GET', '/api/v1/roles/permissions/reference')
  t.equal(ref.status, 200)
  const listed = new Set((ref.body as { permission: string }[]).map((p) => p.permission))
  for (const p of permissions) t.ok(listed.has(p.permission), `the reference lists ${p.permission}`)
})

t.test("a feature's error codes reach the registry when the composition root registers them", async (t) => {
  const { errorCodeInfo } = await import('../../src/kernel/error-codes.ts')
  const { registerFeatureErrorCodes } = await import('../../src/feature/collect.ts')
  const { defineFeature } = await import('../../src/feature/define.ts')
  const info = { status: 409, message: 'a code of the house test', surface: 'http', public: true } as const
  const feature = defineFeature({ name: 'house', routes: () => [], errorCodes: { 'house.example': info } })
  t.equal(errorCodeInfo('house.example'), undefined, 'defining the feature registered nothing')
  registerFeatureErrorCodes([feature])
  t.same(errorCodeInfo('house.example'), info)
})
