import { TypeCompiler } from '@sinclair/typebox/compiler'
import { AuthChange } from '../../schemas/access.ts'

/** The compiled check of an `auth.changed` message, shared by the caches that follow the subject. */
export const AuthChangeCheck = TypeCompiler.Compile(AuthChange)
