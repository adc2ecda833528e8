#!/usr/bin/env node
// The `platform` command (package.json "bin"): the code is TypeScript, run through tsx as the rest
// of the platform is (`node --import tsx`), so this file only registers tsx and hands over.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('./main.ts')
process.exitCode = await main(process.argv.slice(2))
