import uws from 'uWebSockets.js'
import type { us_listen_socket } from 'uWebSockets.js'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/* The baseline: the smallest uWebSockets.js server, answering every GET with "hello". */
const app = uws.App()
app.get('/*', (res) => {
  res.end('hello')
})
app.listen('127.0.0.1', 0, (socket: us_listen_socket | false) => {
  if (socket === false) {
    reportFailure(new Error('uws: cannot listen'))
    return
  }
  onShutdown(() => uws.us_listen_socket_close(socket))
  reportReady({ port: uws.us_socket_local_port(socket as unknown as Parameters<typeof uws.us_socket_local_port>[0]) })
})
