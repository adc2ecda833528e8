import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * With RPC_IN_PROCESS=false no route is answered in memory, as in a split deployment: the gateway
 * reaches /mcp over NATS and the MCP handler reaches the function's execute route over NATS too
 * (src/mcp/route-call.ts), with the caller carried in the request headers.
 */
t.test('a tool call reaches its route over NATS', async (t) => {
  const env = await startTestPlatform(t, { RPC_IN_PROCESS: 'false' })
  const created = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'nats',
      name: 'whoami',
      code: 'def handler(input, context):\n    return {"user": context["user_email"], "n": input["n"]}\n',
    },
  })
  t.equal(created.status, 201, created.text)
  const client = new Client({ name: 'platform-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${env.base}/mcp/nats`), {
      requestInit: { headers: { authorization: `Bearer ${env.adminToken}` } },
    }),
  )
  t.teardown(() => client.close())
  t.same(
    (await client.listTools()).tools.map((x) => x.name),
    ['fn.nats.whoami'],
  )
  const out = await client.callTool({ name: 'fn.nats.whoami', arguments: { n: 3 } })
  t.notOk(out.isError)
  t.same(out.structuredContent, { user: 'admin@test.local', n: 3 })
  await t.rejects(client.callTool({ name: 'fn.nats.other', arguments: {} }), /Unknown tool/)
})
