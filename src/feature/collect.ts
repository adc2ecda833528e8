import type { ActorFactory } from '../../actors/runtime/define-actor.ts'
import type { RouteDef } from '../api/route.ts'
import { registerErrorCodes } from '../kernel/error-codes.ts'
import type { RecordDecorator } from '../resources/decorate.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { SpecCheck } from '../resources/validation.ts'
import type { ComponentProxies } from './component-proxy.ts'
import type { ConfigKind } from './config-kinds.ts'
import type { Feature, ServiceBase, ServiceContext, SpecCheckContext } from './define.ts'
import type { HealthSource } from './health.ts'
import type { PermissionInfo } from './permissions.ts'
import type { ToolProviderFactory } from './tools.ts'

/*
 * The features' contributions gathered from the list, in list order, for the roles to hand to
 * their consumers. Pure functions of the list (no state): a role calls what it needs.
 */
export const featureKinds = (features: readonly Feature[]): AnyKind[] => features.flatMap((f) => f.kinds ?? [])

export const featureActors = (features: readonly Feature[]): ActorFactory[] => features.flatMap((f) => f.actors ?? [])

export const featureTools = (features: readonly Feature[]): ToolProviderFactory[] =>
  features.flatMap((f) => f.tools ?? [])

export const featurePermissions = (features: readonly Feature[]): PermissionInfo[] =>
  features.flatMap((f) => f.permissions ?? [])

export const featureSpecChecks = (features: readonly Feature[], ctx: SpecCheckContext): SpecCheck[] =>
  features.flatMap((f) => f.specChecks?.(ctx) ?? [])

export const featureRecordDecorators = (features: readonly Feature[], ctx: ServiceBase): RecordDecorator[] =>
  features.flatMap((f) => f.recordDecorators?.(ctx) ?? [])

/** One factory per area: a second feature claiming an area is a programming error. */
export function featureComponentProxies(features: readonly Feature[]): ComponentProxies {
  const out: ComponentProxies = {}
  for (const f of features)
    for (const [area, make] of Object.entries(f.componentProxies ?? {}) as [keyof ComponentProxies, never][]) {
      if (out[area] !== undefined) throw new Error(`component proxy area ${area} contributed twice (${f.name})`)
      out[area] = make
    }
  return out
}

/** Every route of the platform, in list order: what the gateway serves and the documents describe. */
export function featureRoutes(features: readonly Feature[]): RouteDef[] {
  const kinds = featureKinds(features)
  return features.flatMap((f) => f.routes({ kinds }))
}

/**
 * The features' error codes into the kernel's registry (which `AppError` reads wherever it is
 * thrown); called by the composition root before anything starts, never by a module's import.
 */
export function registerFeatureErrorCodes(features: readonly Feature[]): void {
  for (const f of features) if (f.errorCodes !== undefined) registerErrorCodes(f.errorCodes)
}

/** The config kinds the features contribute (the generic resource kinds' adapters are the config feature's own). */
export const featureConfigKinds = (features: readonly Feature[], ctx: ServiceContext): ConfigKind[] =>
  features.flatMap((f) => f.configKinds?.(ctx) ?? [])

/** The features' health checks, each named by its feature (the name a failing check's service gets). */
export const featureHealthChecks = (features: readonly Feature[]): HealthSource[] =>
  features.flatMap((f) => (f.health === undefined ? [] : [{ feature: f.name, check: f.health }]))
