import { bind, type BoundRoute } from '../api/bind.ts'
import type { Config } from '../kernel/config.ts'
import { publicBase } from '../files/handlers.ts'
import { MCP_ROUTES as R } from './routes.ts'

/*
 * RFC 9728 Protected Resource Metadata for /mcp, which an MCP client reads after a 401 (the
 * gateway's challenge names it). The platform is its own authorization server in the sense that
 * it issues the bearer tokens /mcp accepts (`POST /auth/login` + `/auth/verify-otp`, refresh,
 * `POST /auth/token/exchange`) and the API keys; it does not implement OAuth 2.1's authorization
 * endpoint, dynamic client registration or RFC 8414 metadata, so a client cannot run an OAuth
 * flow against it: it is configured with an API key or a token (docs/mcp.md).
 */
export function metadataHandlers(config: Config): BoundRoute[] {
  const configured = publicBase(config)
  return [
    bind(R.protectedResource, async ({ request }) => {
      const host = request.headers?.['host'] ?? ''
      const base = configured !== '' ? configured : host === '' ? '' : `http://${host}`
      return {
        body: {
          resource: `${base}/mcp`,
          authorization_servers: [base],
          bearer_methods_supported: ['header'],
          resource_name: 'Agent platform MCP server',
          resource_documentation: `${base}/docs`,
        },
      }
    }),
  ]
}
